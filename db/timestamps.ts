// Every timestamp the service shows is RFC 3339 in UTC with milliseconds and Z ("2026-11-21T23:40:06.645Z",
// docs/decisions.md §8). pg returns timestamptz columns as Dates; this is the one way they become text.
// (Event envelopes get the same format from integrator.emit_event's to_char in SQL.)
export function rfc3339(value: Date): string {
  return value.toISOString();
}

export function rfc3339OrNull(value: Date | null | undefined): string | null {
  return value ? rfc3339(value) : null;
}
