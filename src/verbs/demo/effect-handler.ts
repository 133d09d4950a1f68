import { connect } from '../../db/connect.js';
import { store, isDemoBizType } from '../../db/port/index.js';

/**
 * The sandbox's handler, run by redrive as a `command` handler:
 * `node effect-handler.js SANDBOX.sqlite {bizType} {bizId} {eventId}` with the task's payload on
 * stdin. It writes the business row the task stands for (a coupon, points or an SMS log line),
 * keyed by the event id so that a duplicate delivery adds nothing, and exits 0. Bad input exits 2
 * (permanent: the task goes to failed with the message); a busy database exits 75 (retried).
 */
const EXIT_PERMANENT = 2;
const EXIT_RETRYABLE = 75;

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

/** The delivery from argv and stdin, or the reason it cannot be applied. */
function parseDelivery(argv: string[], stdin: string) {
  const [file, bizType, bizId, eventId] = argv;
  if (!file || !bizType || !bizId || !eventId)
    return { error: 'usage: effect-handler SANDBOX.sqlite BIZ_TYPE BIZ_ID EVENT_ID (payload on stdin)' };
  if (!isDemoBizType(bizType))
    return { error: `biz type '${bizType}' has no business table in the sandbox (coupon, points, sms)` };
  let payload: unknown;
  try {
    payload = JSON.parse(stdin);
  } catch {
    return { error: `the payload of ${eventId} is not JSON` };
  }
  if (payload === null || typeof payload !== 'object' || Array.isArray(payload))
    return { error: `the payload of ${eventId} is not a JSON object` };
  return { file, bizType, bizId, eventId, payload: payload as Record<string, unknown> };
}

async function main(): Promise<number> {
  const delivery = parseDelivery(process.argv.slice(2), await readStdin());
  if ('error' in delivery) {
    process.stderr.write(`${delivery.error}\n`);
    return EXIT_PERMANENT;
  }
  const db = await connect(`sqlite:${delivery.file}`);
  try {
    const outcome = await store.sandbox.applyDemoEffectOnce(
      db,
      delivery.bizType,
      delivery.bizId,
      delivery.eventId,
      delivery.payload,
    );
    process.stdout.write(`${outcome} ${delivery.eventId}\n`);
    return 0;
  } catch (error) {
    process.stderr.write(`${(error as Error).message}\n`);
    return (error as { code?: unknown }).code === 'SQLITE_BUSY' ? EXIT_RETRYABLE : EXIT_PERMANENT;
  } finally {
    await db.close();
  }
}

process.exitCode = await main().catch((error: unknown) => {
  process.stderr.write(`${(error as Error).message}\n`);
  return EXIT_PERMANENT;
});
