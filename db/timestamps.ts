// Every timestamp the service shows is RFC 3339 in UTC with milliseconds and Z ("2026-11-21T23:40:06.645Z",
// docs/decisions.md §8). pg returns timestamptz columns as Dates; this is the one way they become text.
// (Event envelopes get the same format from integrator.emit_event's to_char in SQL.)
export function rfc3339(value: Date): string {
  return value.toISOString();
}

export function rfc3339OrNull(value: Date | null | undefined): string | null {
  return value ? rfc3339(value) : null;
}

// RFC 3339 date-time, with the leniency the document's validator allows (a lower-case t or z, an offset
// without its colon or minutes): year, month, day, hour, minute, second, fraction, then Z or the offset.
const DATE_TIME =
  /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?(?:[Zz]|([+-])(\d{2})(?::?(\d{2}))?)$/;
const DAYS_IN_MONTH = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
// timestamptz holds far more, but a year has four digits in RFC 3339 and PostgreSQL has no year 0000.
const EARLIEST = Date.parse("0001-01-01T00:00:00Z");
const LATEST = Date.parse("9999-12-31T23:59:59.999Z");

function daysIn(year: number, month: number): number {
  const leap = year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
  return month === 2 && leap ? 29 : (DAYS_IN_MONTH[month - 1] ?? 0);
}

/**
 * The instant an RFC 3339 date-time names, as PostgreSQL takes it: in UTC with microseconds
 * ("2026-11-21T23:40:06.645123Z"; digits beyond microseconds are dropped, a leap second is the next
 * minute's first, as PostgreSQL reads it). Undefined when the text names no instant: a day the month does
 * not have (February 30), an hour past 23, an offset past ±23:59, or an instant before 0001-01-01T00:00:00Z
 * or after 9999-12-31T23:59:59.999999Z. PostgreSQL refuses such text, and offsets past ±15:59 too, so
 * every date-time from a request reaches a statement as this text.
 */
export function instantOf(text: string): string | undefined {
  const match = DATE_TIME.exec(text);
  if (!match) return undefined;
  const [year, month, day, hour, minute, second] = match.slice(1, 7).map(Number) as [
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  const fraction = match[7] ?? "";
  const [offsetHours, offsetMinutes] = [Number(match[9] ?? 0), Number(match[10] ?? 0)];
  if (month < 1 || month > 12 || day < 1 || day > daysIn(year, month)) return undefined;
  if (hour > 23 || minute > 59 || second > 60 || offsetHours > 23 || offsetMinutes > 59) return undefined;
  // Date.UTC would read years 0 to 99 as 1900 to 1999.
  const local = new Date(0);
  local.setUTCFullYear(year, month - 1, day);
  local.setUTCHours(hour, minute, second, Number(fraction.slice(0, 3).padEnd(3, "0")));
  const offset = (match[8] === "-" ? -1 : 1) * (offsetHours * 60 + offsetMinutes) * 60_000;
  const utc = local.getTime() - offset;
  if (utc < EARLIEST || utc > LATEST) return undefined;
  return new Date(utc).toISOString().replace("Z", `${fraction.slice(3, 6).padEnd(3, "0")}Z`);
}
