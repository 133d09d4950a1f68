import type { AckListResult, AckResult } from '../verbs/ack/index.js';
import { renderTable } from './table.js';
import { chalk, printable } from './terminal.js';

/** `ack --list`: one row per acknowledgement, newest first. */
export function renderAckList(result: AckListResult): string {
  if (result.acks.length === 0) return chalk.dim('No acknowledgements.');
  return renderTable(
    ['id', 'state', 'code', 'broker/queue', 'until', 'operator', 'reason'],
    result.acks.map((a) => [
      a.id,
      a.state,
      a.code,
      `${a.broker}${a.queue === null ? '' : `/${printable(a.queue, 40)}`}`,
      a.until,
      a.operator,
      printable(a.reason, 60),
    ]),
  );
}

/** `ack CODE` and `ack --remove ID`: what was done. */
export function renderAck(result: AckResult): string {
  const a = result.ack;
  if (!a) return '';
  const what = `${a.code} on ${a.broker}${a.queue === null ? '' : `/${a.queue}`}`;
  if (result.action === 'would-add')
    return `dry run: would acknowledge ${what} until ${a.until}; nothing written.`;
  if (result.action === 'would-remove')
    return `dry run: would end acknowledgement #${a.id} (${what}); nothing written.`;
  if (result.action === 'removed') return `ended acknowledgement #${a.id} (${what}): it counts again.`;
  return `acknowledged ${what} until ${a.until} (#${a.id}); taskrecon ack --remove ${a.id} ends it earlier.`;
}
