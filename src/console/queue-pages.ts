import type { Context } from '../context.js';
import { inspectQueues, brokersFor } from '../verbs/queues/index.js';
import type { QueuesResult } from '../brokers/types.js';

/** The queues page's data source (the command wires it to the configured brokers). */
export interface QueuePages {
  inspect(nowEpoch: number): Promise<QueuesResult>;
}

/**
 * The configured brokers, inspected as `queues` does (counts, no peek) each time the page opens.
 * No snapshot is appended: the console only reads. Undefined when no broker is configured.
 */
export function queuePages(context: Context): QueuePages | undefined {
  if (Object.keys(context.config.brokers ?? {}).length === 0) return undefined;
  return {
    inspect: (nowEpoch) => inspectQueues({ brokers: brokersFor(context, {}), peek: 0, nowEpoch }),
  };
}
