// Identifiers made in the application: time-ordered UUIDs (version 7, RFC 9562) like the database's
// integrator.uuid_v7(), for rows whose id is needed before they are written.
import { randomUUID } from "node:crypto";

/**
 * A version 7 UUID: the 48-bit Unix time in milliseconds, then the version, 12 random bits, the variant
 * and 62 random bits. The random bits are a version 4 UUID's (randomUUID draws from a cached entropy
 * pool, where a randomBytes call per id was a visible share of a write's CPU time).
 */
export function uuidV7(now: number = Date.now()): string {
  const random = randomUUID(); // xxxxxxxx-xxxx-4xxx-Vxxx-xxxxxxxxxxxx, V already the RFC 9562 variant
  const time = now.toString(16).padStart(12, "0");
  return `${time.slice(0, 8)}-${time.slice(8, 12)}-7${random.slice(15)}`;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** True for a UUID in its canonical text form (any version, any case). */
export function isUuid(value: string): boolean {
  return UUID.test(value);
}
