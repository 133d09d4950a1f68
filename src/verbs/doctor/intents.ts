import type { Db } from '../../db/types.js';
import { listOpenIntents } from '../../ops/intents/index.js';
import { check, type DoctorCheck } from './check.js';

/** How many open intents the check names one by one (the rest are counted). */
const NAMED = 5;

/**
 * Write-ahead intents still open: a batch of a run in progress, or of a run killed between its
 * broker write and its settlement. Doctor writes nothing: it names them and the command that
 * settles them by looking at the broker (the next run of the same kind settles them first).
 */
export async function openIntentsCheck(db: Db): Promise<DoctorCheck> {
  const open = await listOpenIntents(db, {}, 1000);
  if (open.length === 0) return check('open intents', 'ok', 'no write-ahead intent is open');
  const named = open
    .slice(0, NAMED)
    .map((i) => `${i.kind} of run ${i.runId} on ${i.source} (${i.from} → ${i.to})`)
    .join('; ');
  const more = open.length > NAMED ? `; and ${open.length - NAMED} more` : '';
  return check(
    'open intents',
    'warn',
    `${open.length === 1000 ? '1000+' : open.length} batch intent(s) open — a run in progress, or one killed before it settled: ${named}${more}`,
    'Run the same command again (`taskrecon queues move`/`queues recover` on the broker, `compensate --action retry` or `sweep` on the source): it settles them first by looking where the jobs are, auditing what landed under the killed run.',
  );
}
