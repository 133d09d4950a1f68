import { randomUUID } from 'node:crypto';
import { Context } from '../context.js';
import type { MoveResult, QueuesResult } from '../brokers/types.js';
import {
  brokerFor,
  brokersFor,
  inspectQueues,
  runMove,
  runRecover,
  type RecoverResult,
} from '../verbs/queues/index.js';

/** BullMQ failed jobs shown per queue on the queues page, with payload and error (read-only). */
const FAILED_SHOWN = 5;
/** Who asks for a queue change and why, as the CLI's move flags say it. */
export interface QueueActor {
  operator: string;
  /** Required to apply; a preview (dry run) needs none. */
  reason?: string;
  dryRun: boolean;
}

/** The queues page's data source and its two changes (the command wires them to the configured brokers). */
export interface QueuePages {
  /** The configured brokers' names. */
  names: readonly string[];
  inspect(nowEpoch: number): Promise<QueuesResult>;
  /** `queues recover --broker B [--queue Q]`: a dry run counts, a run moves and audits. */
  recover(broker: string, queue: string | undefined, actor: QueueActor): Promise<RecoverResult>;
  /** `queues move --broker B --from F --to T --what all`: a dry run counts, a run moves and audits. */
  move(broker: string, from: string, to: string, actor: QueueActor): Promise<MoveResult>;
}

/** The CLI's defaults for a move run from the console: its batch, no rate limit, no cap. */
const BATCH = 1000;

/**
 * The configured brokers, inspected as `queues` does (counts, no peek) each time the page opens (no
 * snapshot is appended), and recovered or moved as `queues recover` / `queues move` do: the same
 * verbs, the same audit rows (in the audit table of the configured database). Each change opens its
 * own connection to the audit database and closes it. Undefined when no broker is configured.
 */
export function queuePages(context: Context): QueuePages | undefined {
  if (Object.keys(context.config.brokers ?? {}).length === 0) return undefined;
  const withContext = async <T>(run: (ctx: Context) => Promise<T>): Promise<T> => {
    const own = new Context(context.input, context.env, context.cwd);
    try {
      return await run(own);
    } finally {
      await own.close();
    }
  };
  const options = (actor: QueueActor) => ({
    operator: actor.operator,
    reason: actor.reason,
    dryRun: actor.dryRun,
    batch: BATCH,
    runId: randomUUID(),
  });
  return {
    names: Object.keys(context.config.brokers ?? {}),
    inspect: (nowEpoch) =>
      inspectQueues({ brokers: brokersFor(context, {}), peek: 0, failedDetail: FAILED_SHOWN, nowEpoch }),
    recover: (broker, queue, actor) =>
      withContext((ctx) =>
        runRecover(ctx, brokerFor(ctx, { broker }), { ...options(actor), queue }, () => undefined),
      ),
    move: (broker, from, to, actor) =>
      withContext((ctx) =>
        runMove(
          ctx,
          brokerFor(ctx, { broker }),
          { ...options(actor), from, to, what: 'all' },
          () => undefined,
        ),
      ),
  };
}
