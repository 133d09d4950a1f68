/** The current UTC offset of an IANA zone as '+08:00', or the offset itself if given as one; undefined if unknown. */
export function offsetOfZone(zone: string, at: Date = new Date()): string | undefined {
  if (/^[+-]\d{2}:\d{2}$/.test(zone)) return zone;
  if (zone === 'UTC' || zone === 'Z') return '+00:00';
  try {
    const parts = new Intl.DateTimeFormat('en-US', {
      timeZone: zone,
      timeZoneName: 'longOffset',
    }).formatToParts(at);
    const name = parts.find((p) => p.type === 'timeZoneName')?.value ?? '';
    if (name === 'GMT') return '+00:00';
    const match = /GMT([+-]\d{2}):?(\d{2})?/.exec(name);
    return match ? `${match[1]}:${match[2] ?? '00'}` : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Whether a zone changes its offset within the year (daylight saving) around `at`: its offsets on
 * the first days of January and July of this year and the next differ. A zone without (UTC,
 * Asia/Shanghai) is the same as its fixed offset; an offset given as one has none.
 */
export function observesDaylightSaving(zone: string, at: Date = new Date()): boolean {
  const year = at.getUTCFullYear();
  const offsets = new Set(
    [year, year + 1].flatMap((y) =>
      [0, 6].map((month) => offsetOfZone(zone, new Date(Date.UTC(y, month, 1)))),
    ),
  );
  return offsets.size > 1;
}

/** Minutes east of UTC of an offset string like '+08:00' or '-05:30'. */
export function offsetMinutes(offset: string): number | undefined {
  const match = /^([+-])(\d{2}):(\d{2})$/.exec(offset);
  if (!match) return undefined;
  const minutes = Number(match[2]) * 60 + Number(match[3]);
  return match[1] === '-' ? -minutes : minutes;
}
