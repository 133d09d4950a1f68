/**
 * When a sweep rule may retry: a daily `window` ("09:00-18:00") minus its `blackout` ranges
 * ("01:00-05:00"), read as wall-clock times in one IANA zone (the config's `appTimeZone`). A range
 * whose end is earlier than its start runs across midnight ("22:00-06:00"). Pure: "now" comes in
 * as epoch seconds (the database clock), the zone rules come from the runtime's Intl data.
 */

/** One daily range in seconds of the local day: [start, end), across midnight when end <= start. */
export interface DailyRange {
  text: string;
  start: number;
  end: number;
}

export interface Schedule {
  window?: DailyRange;
  blackouts: DailyRange[];
  zone: string;
}

const DAY = 86_400;
const RANGE = /^\s*(\d{1,2}):(\d{2})\s*-\s*(\d{1,2}):(\d{2})\s*$/;

/** Parses "HH:MM-HH:MM" (24:00 allowed as an end), or returns why it is not one. */
export function parseDailyRange(text: string): DailyRange | string {
  const m = RANGE.exec(text);
  if (!m) return `'${text}' is not a daily range: write HH:MM-HH:MM, e.g. 09:00-18:00 or 22:00-06:00`;
  const [h1, m1, h2, m2] = [m[1], m[2], m[3], m[4]].map(Number) as [number, number, number, number];
  if (h1 > 23 || m1 > 59 || h2 > 24 || m2 > 59 || (h2 === 24 && m2 !== 0))
    return `'${text}' names a time that does not exist (hours 00-23, minutes 00-59; 24:00 only as an end)`;
  const start = (h1 * 60 + m1) * 60;
  const end = ((h2 * 60 + m2) * 60) % DAY;
  if (start === end) return `'${text}' is empty (start and end are the same time)`;
  return { text: text.trim(), start, end };
}

/** Whether a second of the local day lies in the range. */
export function inRange(range: DailyRange, secondOfDay: number): boolean {
  return range.start < range.end
    ? secondOfDay >= range.start && secondOfDay < range.end
    : secondOfDay >= range.start || secondOfDay < range.end;
}

const formatters = new Map<string, Intl.DateTimeFormat>();

/** Throws RangeError for a zone the runtime does not know. */
function formatter(zone: string): Intl.DateTimeFormat {
  let f = formatters.get(zone);
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', {
      timeZone: zone,
      hourCycle: 'h23',
      hour: '2-digit',
      minute: '2-digit',
      second: '2-digit',
    });
    formatters.set(zone, f);
  }
  return f;
}

/** Whether the runtime knows the IANA zone. */
export function isKnownZone(zone: string): boolean {
  try {
    formatter(zone);
    return true;
  } catch {
    return false;
  }
}

/** The wall-clock second of the day at an instant in a zone. */
export function localSecondOfDay(epochSeconds: number, zone: string): number {
  const parts = formatter(zone).formatToParts(new Date(Math.floor(epochSeconds) * 1000));
  const get = (type: string) => Number(parts.find((p) => p.type === type)?.value ?? 0);
  return (get('hour') % 24) * 3600 + get('minute') * 60 + get('second');
}

/** Eligibility at a second of the local day: inside the window (if any) and in no blackout. */
export function eligibleAtSecond(schedule: Omit<Schedule, 'zone'>, secondOfDay: number): boolean {
  if (schedule.window && !inRange(schedule.window, secondOfDay)) return false;
  return !schedule.blackouts.some((b) => inRange(b, secondOfDay));
}

/** Whether a rule may retry at an instant. */
export function isEligible(schedule: Schedule, epochSeconds: number): boolean {
  if (!schedule.window && schedule.blackouts.length === 0) return true;
  return eligibleAtSecond(schedule, localSecondOfDay(epochSeconds, schedule.zone));
}

/**
 * The first instant at or after `epochSeconds` at which the rule may retry: the instant itself when
 * eligible, else the nearest opening boundary (the window's start or a blackout's end) that is
 * eligible. Boundaries are wall-clock times, so across a DST change the instant is corrected by the
 * offset difference. Null when the schedule is never eligible (config validation rejects that).
 */
export function eligibleAt(schedule: Schedule, epochSeconds: number): number | null {
  const now = Math.floor(epochSeconds);
  if (isEligible(schedule, now)) return now;
  const local = localSecondOfDay(now, schedule.zone);
  const openings = [schedule.window?.start, ...schedule.blackouts.map((b) => b.end)].filter(
    (s): s is number => s !== undefined,
  );
  const candidates: number[] = [];
  for (const boundary of openings) {
    const delta = (((boundary - local) % DAY) + DAY) % DAY;
    for (const days of [0, 1, 2]) {
      let at = now + delta + days * DAY;
      const drift = localSecondOfDay(at, schedule.zone) - boundary;
      if (drift !== 0) at -= Math.abs(drift) > DAY / 2 ? drift - Math.sign(drift) * DAY : drift;
      if (at > now) candidates.push(at);
    }
  }
  candidates.sort((a, b) => a - b);
  return candidates.find((at) => isEligible(schedule, at)) ?? null;
}

/** Whether any minute of the local day is eligible (a window wholly covered by blackouts never is). */
export function everEligible(schedule: Omit<Schedule, 'zone'>): boolean {
  for (let s = 0; s < DAY; s += 60) if (eligibleAtSecond(schedule, s)) return true;
  return false;
}
