import { MOVE_INTENT_KIND } from '../../brokers/rabbitmq/move.js';
import type { IntentRecord } from '../../db/port/index.js';
import type { Db } from '../../db/types.js';
import { listOpenIntents } from '../../ops/intents/index.js';
import { check, type DoctorCheck } from './check.js';

/** Message ids shown per broker; the rest are counted. */
const SHOWN = 50;

/**
 * RabbitMQ moves killed between publishing a batch and settling its intent: each of their messages
 * may be at the target and was left at the source too. doctor reads only, so it lists them (one
 * `warn` per broker, by message id); the next `queues move` on that broker audits and settles them.
 */
export async function openMoveIntentChecks(db: Db): Promise<DoctorCheck[]> {
  const open = await listOpenIntents(db, { kinds: [MOVE_INTENT_KIND] }, 1000);
  const byBroker = new Map<string, IntentRecord[]>();
  for (const intent of open) byBroker.set(intent.source, [...(byBroker.get(intent.source) ?? []), intent]);
  return [...byBroker].map(([broker, intents]) => {
    const ids = intents.flatMap((i) => i.jobs);
    const runs = [...new Set(intents.map((i) => i.runId))];
    const targets = [...new Set(intents.map((i) => i.to))];
    const shown =
      ids.slice(0, SHOWN).join(', ') + (ids.length > SHOWN ? `, … (${ids.length - SHOWN} more)` : '');
    return check(
      `broker ${broker}: unsettled moves`,
      'warn',
      `${ids.length} message(s) of run(s) ${runs.join(', ')} may be duplicated at ${targets.join(', ')}: ` +
        `the run stopped between publishing them and acking their sources: ${shown}`,
      `Run \`taskrecon queues move --broker ${broker} …\` again: it audits these under the stopped run and lists ` +
        'them as possible duplicates; consumers that dedupe by message id are unaffected.',
    );
  });
}
