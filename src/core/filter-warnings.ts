/**
 * Filters that cannot match anything, said on stderr before the run (it still runs: an empty
 * result is a correct answer, but usually not what was meant). Pure: "now" is passed in.
 */

/** A `--since`/`--until` value as the flag parses it: a duration ago, or an instant. */
export type TimeValue = { ago: number } | { epoch: number };

/** Clocks disagree a little: a --since within this much of now is not "in the future". */
const FUTURE_SLACK_SECONDS = 60;

function epochOf(value: TimeValue, nowEpoch: number): number {
  return 'ago' in value ? nowEpoch - Math.round(value.ago / 1000) : value.epoch;
}

const iso = (epoch: number) => new Date(epoch * 1000).toISOString().replace('.000Z', 'Z');

export function timeFilterWarnings(
  since: TimeValue | undefined,
  until: TimeValue | undefined,
  nowEpoch: number,
): string[] {
  const out: string[] = [];
  const s = since && epochOf(since, nowEpoch);
  const u = until && epochOf(until, nowEpoch);
  if (s !== undefined && s > nowEpoch + FUTURE_SLACK_SECONDS)
    out.push(`--since ${iso(s)} is in the future: nothing can match yet`);
  if (s !== undefined && u !== undefined && u <= s)
    out.push(`--until ${iso(u)} is not after --since ${iso(s)}: nothing can match`);
  return out;
}

/** A --biz-type that no row has, with the known biz types (the closest first) as suggestions. */
export function bizTypeWarnings(
  requested: readonly string[],
  present: ReadonlySet<string>,
  known: readonly string[],
): string[] {
  const out: string[] = [];
  for (const bizType of requested) {
    if (present.has(bizType)) continue;
    const list = known.length
      ? `; biz types in the table: ${known.slice(0, 10).join(', ')}${known.length > 10 ? ', …' : ''}`
      : '; the table has no rows';
    out.push(`--biz-type ${bizType}: no task has this biz type${list}`);
  }
  return out;
}
