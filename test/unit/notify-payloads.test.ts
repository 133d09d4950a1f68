import { createHmac } from 'node:crypto';
import { createServer, type Server, type Socket } from 'node:net';
import nock from 'nock';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { ReportResult } from '../../src/core/report.js';
import { DEFAULT_THRESHOLDS } from '../../src/core/thresholds.js';
import { buildAlert, markdownText } from '../../src/notify/alert.js';
import { TRUNCATION_MARK } from '../../src/notify/fit.js';
import { maskWebhookUrl, NOTIFY_SPECS } from '../../src/notify/registry.js';
import { sendWebhook } from '../../src/notify/send.js';
import type { Alert, NotifyKind, NotifyTarget } from '../../src/notify/types.js';

const NOW_MS = 1_795_000_000_123;
const SECRET = 'SECtest-secret-0123456789';

const report: Omit<ReportResult, 'notifications'> = {
  status: 'CRITICAL',
  source: {
    name: 'tasks',
    profile: 'async-task',
    table: 'async_task',
    db: 'mysql://app@127.0.0.1:3306/shop',
  },
  now: '2026-11-17T08:00:00Z',
  window: { seconds: 3600, since: '2026-11-17T07:00:00Z', until: '2026-11-17T08:00:00Z' },
  metrics: {
    created: 100,
    succeeded: 90,
    failed: 6,
    failureRate: 0.06,
    latencyAvgSeconds: 4,
    latencyP95Seconds: 12,
    due: 2,
    stuck: 0,
    failedOpen: 9,
    oldestDueSeconds: 30,
  },
  breaches: [{ metric: 'failureRate', level: 'crit', value: 0.06, threshold: 0.05 }],
  thresholds: DEFAULT_THRESHOLDS,
  byBizType: [
    {
      bizType: 'coupon',
      created: 60,
      succeeded: 54,
      failed: 6,
      failureRate: 0.1,
      latencyAvgSeconds: 4,
      latencyP95Seconds: 12,
      due: 2,
      stuck: 0,
      failedOpen: 9,
      oldestDueSeconds: 30,
      sample: {
        id: 42,
        bizId: 'order-1001',
        eventId: 'evt-42',
        error: 'HTTP 503 from coupon-svc\n at x()',
        failedAt: '2026-11-17T07:59:00Z',
      },
    },
    {
      bizType: 'sms',
      created: 40,
      succeeded: 36,
      failed: 0,
      failureRate: 0,
      latencyAvgSeconds: 4,
      latencyP95Seconds: 10,
      due: 0,
      stuck: 0,
      failedOpen: 0,
      oldestDueSeconds: null,
      sample: null,
    },
  ],
  notes: [],
};

const TEXT_LINES = [
  '[taskrecon] CRITICAL tasks: failureRate 6% >= 5% (crit)',
  'created 100 · failed 6 · failure rate 6% · p95 12s · stuck 0 · due 2 · oldest due 30s · failed open 9 (window 1h)',
];
const MARKDOWN = [
  `### ${TEXT_LINES[0]}`,
  `> ${TEXT_LINES[1]}`,
  '',
  '**Breaches**',
  '- failureRate 6% >= 5% (crit)',
  '',
  '**Failing biz types**',
  '- coupon: 6 failed in window, 9 awaiting action — biz_id `order-1001`, event_id `evt-42`: HTTP 503 from coupon-svc',
  '',
  '<font color="comment">2026-11-17T08:00:00Z · taskrecon report</font>',
].join('\n');
const PLAIN = [
  ...TEXT_LINES,
  'Failing biz types:',
  '- coupon: 6 failed in window, 9 awaiting action — biz_id order-1001, event_id evt-42: HTTP 503 from coupon-svc',
  '2026-11-17T08:00:00Z · taskrecon report',
].join('\n');

const target = (kind: NotifyKind, url: string, secret?: string): NotifyTarget => ({
  kind,
  url,
  secret,
  timeoutMs: 2000,
});

/** DingTalk's documented check: HmacSHA256(key=secret, timestamp + "\n" + secret), Base64. */
function dingtalkValid(timestamp: string, sign: string, secret: string): boolean {
  return createHmac('sha256', secret).update(`${timestamp}\n${secret}`).digest('base64') === sign;
}
/** Feishu's documented check: HmacSHA256(key=timestamp + "\n" + secret, empty message), Base64. */
function feishuValid(timestamp: string, sign: string, secret: string): boolean {
  return createHmac('sha256', `${timestamp}\n${secret}`).digest('base64') === sign;
}

beforeAll(() => {
  nock.disableNetConnect();
  nock.enableNetConnect(/^(127\.0\.0\.1|localhost|\[::1\])(:\d+)?$/);
});
afterEach(() => nock.cleanAll());
afterAll(() => nock.enableNetConnect());

async function capture(
  kind: NotifyKind,
  origin: string,
  path: string,
  reply: object,
  url: string,
  secret?: string,
) {
  let body: unknown;
  let query: Record<string, string> = {};
  const scope = nock(origin)
    .post((p) => p.startsWith(path))
    .query(true)
    .reply(function (uri, requestBody) {
      body = requestBody;
      query = Object.fromEntries(new URL(uri, origin).searchParams);
      return [200, reply];
    });
  const spec = NOTIFY_SPECS[kind];
  const outcome = await sendWebhook(
    spec,
    spec.build(buildAlert(report, false), target(kind, url, secret), NOW_MS),
    2000,
  );
  expect(scope.isDone()).toBe(true);
  return { body, query, outcome };
}

describe('webhook payloads, exactly as each kind expects them', () => {
  it('WeCom: a markdown message, accepted on errcode 0', async () => {
    const { body, outcome } = await capture(
      'wecom',
      'https://qyapi.weixin.qq.com',
      '/cgi-bin/webhook/send',
      { errcode: 0, errmsg: 'ok' },
      'https://qyapi.weixin.qq.com/cgi-bin/webhook/send?key=KEY',
    );
    expect(body).toEqual({ msgtype: 'markdown', markdown: { content: MARKDOWN } });
    expect(outcome).toMatchObject({ ok: true, httpStatus: 200, error: null });
  });

  it('WeCom: an errcode other than 0 is a failure, though HTTP says 200', async () => {
    const { outcome } = await capture(
      'wecom',
      'https://qyapi.weixin.qq.com',
      '/cgi-bin',
      { errcode: 93000, errmsg: 'invalid webhook url' },
      'https://qyapi.weixin.qq.com/cgi-bin/webhook/send?key=BAD',
    );
    expect(outcome).toMatchObject({ ok: false, error: 'errcode 93000: invalid webhook url' });
  });

  it('DingTalk: markdown, signed in the query with timestamp (ms) and sign per the documented algorithm', async () => {
    const { body, query } = await capture(
      'dingtalk',
      'https://oapi.dingtalk.com',
      '/robot/send',
      { errcode: 0 },
      'https://oapi.dingtalk.com/robot/send?access_token=TOKEN',
      SECRET,
    );
    expect(body).toEqual({ msgtype: 'markdown', markdown: { title: TEXT_LINES[0], text: MARKDOWN } });
    expect(query.access_token).toBe('TOKEN');
    expect(query.timestamp).toBe(String(NOW_MS));
    expect(dingtalkValid(query.timestamp as string, query.sign as string, SECRET)).toBe(true);
    expect(dingtalkValid(query.timestamp as string, query.sign as string, 'SECwrong')).toBe(false);
    expect(dingtalkValid(String(NOW_MS + 1), query.sign as string, SECRET)).toBe(false);
  });

  it('DingTalk: the sign is URL-encoded in the URL (Base64 may hold + / =)', () => {
    const request = NOTIFY_SPECS.dingtalk.build(
      buildAlert(report, false),
      target('dingtalk', 'https://oapi.dingtalk.com/robot/send?access_token=T', SECRET),
      NOW_MS,
    );
    const raw = /[?&]sign=([^&]*)/.exec(request.url)?.[1] as string;
    expect(raw).not.toMatch(/[+/=]/);
    expect(decodeURIComponent(raw)).toBe(
      createHmac('sha256', SECRET).update(`${NOW_MS}\n${SECRET}`).digest('base64'),
    );
  });

  it('Feishu: a text message with timestamp (s) and sign in the body per the documented algorithm', async () => {
    const { body } = await capture(
      'feishu',
      'https://open.feishu.cn',
      '/open-apis/bot/v2/hook',
      { code: 0, msg: 'success' },
      'https://open.feishu.cn/open-apis/bot/v2/hook/0b6a2b3c-aaaa-bbbb-cccc-123456789abc',
      SECRET,
    );
    const timestamp = String(Math.floor(NOW_MS / 1000));
    expect(body).toEqual({ timestamp, sign: expect.any(String), msg_type: 'text', content: { text: PLAIN } });
    const sign = (body as { sign: string }).sign;
    expect(feishuValid(timestamp, sign, SECRET)).toBe(true);
    expect(feishuValid(timestamp, sign, 'SECwrong')).toBe(false);
  });

  it('Feishu: a non-zero code is a failure', async () => {
    const { outcome } = await capture(
      'feishu',
      'https://open.feishu.cn',
      '/open-apis',
      { code: 19021, msg: 'sign match fail' },
      'https://open.feishu.cn/open-apis/bot/v2/hook/x',
      SECRET,
    );
    expect(outcome).toMatchObject({ ok: false, error: 'code 19021: sign match fail' });
  });

  it('Slack: mrkdwn text', async () => {
    const { body } = await capture(
      'slack',
      'https://hooks.slack.com',
      '/services',
      {},
      'https://hooks.slack.com/services/T000/B000/XXXXXXXXXXXXXXXXXXXXXXXX',
    );
    expect(body).toEqual({
      text: [
        `*${TEXT_LINES[0]}*`,
        TEXT_LINES[1],
        '*Failing biz types*',
        '• coupon: 6 failed in window, 9 awaiting action — biz_id `order-1001`, event_id `evt-42`: HTTP 503 from coupon-svc',
        '_2026-11-17T08:00:00Z · taskrecon report_',
      ].join('\n'),
    });
  });

  it('generic: the alert as data plus text', async () => {
    const { body } = await capture(
      'generic',
      'https://alerts.example.org',
      '/hook',
      {},
      'https://alerts.example.org/hook',
    );
    expect(body).toEqual({
      tool: 'taskrecon',
      status: 'CRITICAL',
      recovered: false,
      source: 'tasks',
      now: '2026-11-17T08:00:00Z',
      windowSeconds: 3600,
      title: TEXT_LINES[0],
      summary: TEXT_LINES[1],
      breaches: ['failureRate 6% >= 5% (crit)'],
      failing: [
        {
          bizType: 'coupon',
          failed: 6,
          failedOpen: 9,
          sample: {
            id: 42,
            bizId: 'order-1001',
            eventId: 'evt-42',
            error: 'HTTP 503 from coupon-svc\n at x()',
          },
        },
      ],
      text: PLAIN,
    });
  });

  it('masks webhook tokens wherever a target is shown', () => {
    expect(maskWebhookUrl('https://qyapi.weixin.qq.com/cgi-bin/webhook/send?key=abc')).toBe(
      'https://qyapi.weixin.qq.com/cgi-bin/webhook/send?key=***',
    );
    expect(maskWebhookUrl('https://hooks.slack.com/services/T000/B000/XXXXXXXXXXXXXXXXXXXXXXXX')).toBe(
      'https://hooks.slack.com/services/T000/B000/***',
    );
  });
});

describe('size limits', () => {
  // Five failing biz types with 1,500-character Chinese names: far beyond every kind's limit.
  const huge: Alert = {
    ...buildAlert(report, false),
    failing: Array.from({ length: 5 }, (_, i) => ({
      bizType: `业务${i}`.padEnd(1500, '测'),
      failed: 1,
      failedOpen: 1,
      sample: null,
    })),
  };
  const bytes = (s: string) => Buffer.byteLength(s, 'utf8');

  it('the unfitted message would break every limit (so the checks below can fail)', () => {
    expect(bytes(markdownText(huge))).toBeGreaterThan(20_000);
  });

  it('WeCom content ≤ 4096 bytes; DingTalk and Feishu bodies ≤ 20000 bytes; generic ≤ 64 KiB; all marked as cut', () => {
    const wecom = JSON.parse(
      NOTIFY_SPECS.wecom.build(huge, target('wecom', 'https://x.test/a'), NOW_MS).body,
    ) as { markdown: { content: string } };
    expect(bytes(wecom.markdown.content)).toBeLessThanOrEqual(4096);
    expect(bytes(wecom.markdown.content)).toBeGreaterThan(4000);
    expect(wecom.markdown.content.endsWith(TRUNCATION_MARK)).toBe(true);
    expect(wecom.markdown.content).not.toContain('\uFFFD');
    for (const kind of ['dingtalk', 'feishu'] as const) {
      const body = NOTIFY_SPECS[kind].build(huge, target(kind, 'https://x.test/a', SECRET), NOW_MS).body;
      expect(bytes(body), kind).toBeLessThanOrEqual(20_000);
      expect(bytes(body), kind).toBeGreaterThan(19_000);
      expect(body).toContain(JSON.stringify(TRUNCATION_MARK).slice(1, -1));
    }
    const bigger: Alert = {
      ...huge,
      failing: huge.failing.map((f) => ({ ...f, bizType: (f.bizType ?? '').repeat(10) })),
    };
    expect(
      bytes(NOTIFY_SPECS.generic.build(bigger, target('generic', 'https://x.test/a'), NOW_MS).body),
    ).toBeLessThanOrEqual(65_536);
    const slack = JSON.parse(
      NOTIFY_SPECS.slack.build(bigger, target('slack', 'https://x.test/a'), NOW_MS).body,
    ) as { text: string };
    expect(slack.text.length).toBeLessThanOrEqual(40_000);
    expect(slack.text.endsWith(TRUNCATION_MARK)).toBe(true);
  });
});

describe('a webhook that fails', () => {
  let silent: Server;
  const sockets: Socket[] = [];
  beforeAll(async () => {
    // Accepts connections and never answers.
    silent = createServer((socket) => void sockets.push(socket));
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
  });
  afterAll(async () => {
    for (const s of sockets) s.destroy();
    await new Promise((resolve) => silent.close(resolve));
  });

  it('is abandoned after its timeout when it never answers, and reported', async () => {
    const port = (silent.address() as { port: number }).port;
    const started = Date.now();
    const outcome = await sendWebhook(
      NOTIFY_SPECS.generic,
      { url: `http://127.0.0.1:${port}/hook`, headers: {}, body: '{}' },
      300,
    );
    const took = Date.now() - started;
    expect(outcome).toMatchObject({ ok: false, httpStatus: null, error: 'no answer within 300 ms' });
    expect(took).toBeGreaterThanOrEqual(250);
    expect(took).toBeLessThan(2000);
  });

  it('is reported when the connection is refused', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as { port: number }).port;
    await new Promise((resolve) => closed.close(resolve));
    const outcome = await sendWebhook(
      NOTIFY_SPECS.generic,
      { url: `http://127.0.0.1:${port}/hook`, headers: {}, body: '{}' },
      2000,
    );
    expect(outcome.ok).toBe(false);
    expect(outcome.error).toMatch(/ECONNREFUSED/);
  });

  it('is reported on an HTTP error status', async () => {
    nock('https://hooks.slack.com').post('/services/x').reply(404, 'no_service');
    const outcome = await sendWebhook(
      NOTIFY_SPECS.slack,
      { url: 'https://hooks.slack.com/services/x', headers: {}, body: '{}' },
      2000,
    );
    expect(outcome).toMatchObject({ ok: false, httpStatus: 404, error: 'HTTP 404: no_service' });
  });
});
