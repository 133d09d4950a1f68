/**
 * Realistic task fixtures for the sandbox: a deterministic mix of biz types and outcomes, with the
 * failure modes of the classic task-table design (stuck processing, overdue retries, failed with real errors, missing
 * and duplicated effects, orphan effects). Pure: the same seed gives the same rows.
 */
export interface FixtureTask {
  bizType: 'coupon' | 'points' | 'sms';
  bizId: string;
  eventId: string;
  payload: string;
  status: 0 | 1 | 2 | 3 | 4;
  retryCount: number;
  /** Seconds relative to now (negative: in the past). */
  nextRetryIn: number;
  lastError: string | null;
  createdAgo: number;
  updatedAgo: number;
  /** How many business rows the task's effect left: 1 normally, 0 missing, 2 duplicated. */
  effects: number;
}

export interface FixtureSet {
  tasks: FixtureTask[];
  /** Business rows with no task behind them: [bizType, bizId]. */
  orphans: Array<[FixtureTask['bizType'], string]>;
}

const ERRORS: Record<FixtureTask['bizType'], string[]> = {
  coupon: [
    'cURL error 28: Operation timed out after 3000 milliseconds with 0 bytes received (http://127.0.0.1:8080/tasks/coupon)',
    'HTTP 400 {"code":"TEMPLATE_EXPIRED","message":"coupon template 2024-double-11 has expired"}',
    'SQLSTATE[40001]: Serialization failure: 1213 Deadlock found when trying to get lock; try restarting transaction',
  ],
  points: [
    'HTTP 503 Service Unavailable from points-service: upstream connect error or disconnect/reset before headers',
    'SQLSTATE[HY000]: General error: 1205 Lock wait timeout exceeded; try restarting transaction',
    'HTTP 422 {"code":"USER_FROZEN","message":"account 88123 is frozen"}',
  ],
  sms: [
    'SMS gateway error 1008: daily quota exceeded for template SMS_PAY_OK',
    'cURL error 7: Failed to connect to 127.0.0.1 port 9000: Connection refused',
    'HTTP 429 Too Many Requests (Retry-After: 60)',
  ],
};

/** Mulberry32: small, fast, deterministic. */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export function buildFixtures(count: number, seed = 20261129): FixtureSet {
  const rand = random(seed);
  const pick = <T>(items: readonly T[]): T => items[Math.floor(rand() * items.length)] as T;
  const types: Array<FixtureTask['bizType']> = ['coupon', 'coupon', 'points', 'points', 'sms'];
  const tasks: FixtureTask[] = [];
  for (let i = 1; i <= count; i++) {
    const bizType = pick(types);
    const orderId = `PAY${String(202611290000 + i)}`;
    const createdAgo = Math.floor(rand() * 6 * 3600) + 600;
    const roll = rand();
    const base = {
      bizType,
      bizId: orderId,
      eventId: `evt-${bizType}-${orderId}`,
      payload: JSON.stringify(payloadOf(bizType, orderId, i)),
      createdAgo,
    };
    if (roll < 0.8) {
      // Done. A few lost their effect (the worker crashed after reporting) or applied it twice.
      const effects = rand() < 0.012 ? 0 : rand() < 0.008 ? 2 : 1;
      tasks.push({
        ...base,
        status: 2,
        retryCount: rand() < 0.1 ? 1 : 0,
        nextRetryIn: -createdAgo,
        lastError: null,
        updatedAgo: createdAgo - 2,
        effects,
      });
    } else if (roll < 0.86) {
      const retries = 1 + Math.floor(rand() * 4);
      const overdue = rand() < 0.6;
      tasks.push({
        ...base,
        status: 0,
        retryCount: retries,
        nextRetryIn: overdue ? -Math.floor(rand() * 1800) - 5 : Math.floor(rand() * 600) + 30,
        lastError: pick(ERRORS[bizType]),
        updatedAgo: 60,
        effects: 0,
      });
    } else if (roll < 0.9) {
      // Processing: most stuck (the worker died), some in flight.
      const stuck = rand() < 0.7;
      tasks.push({
        ...base,
        status: 1,
        retryCount: 0,
        nextRetryIn: -createdAgo,
        lastError: null,
        updatedAgo: stuck ? 1800 + Math.floor(rand() * 3600) : 20,
        effects: 0,
      });
    } else if (roll < 0.97) {
      // Failed after 7 retries; a few did take effect before failing (unsettled).
      tasks.push({
        ...base,
        status: 3,
        retryCount: 7,
        nextRetryIn: -600,
        lastError: pick(ERRORS[bizType]),
        updatedAgo: 600,
        effects: rand() < 0.05 ? 1 : 0,
      });
    } else {
      tasks.push({
        ...base,
        status: 4,
        retryCount: 7,
        nextRetryIn: -3600,
        lastError: pick(ERRORS[bizType]),
        updatedAgo: 3000,
        effects: 1,
      });
    }
  }
  const orphans: FixtureSet['orphans'] = [
    ['coupon', `PAY${202611290000 + count + 1}`],
    ['points', `PAY${202611290000 + count + 2}`],
  ];
  return { tasks, orphans };
}

function payloadOf(bizType: FixtureTask['bizType'], orderId: string, i: number): Record<string, unknown> {
  const userId = 10_000 + (i % 997);
  if (bizType === 'coupon')
    return { order_id: orderId, user_id: userId, coupon_template_id: 'TPL-NEWUSER-20' };
  if (bizType === 'points') return { order_id: orderId, user_id: userId, points: 10 + (i % 90) };
  return { order_id: orderId, phone: `138${String(10_000_000 + i).slice(-8)}`, template: 'SMS_PAY_OK' };
}
