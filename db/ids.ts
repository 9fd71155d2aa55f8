// Identifiers made in the application: time-ordered UUIDs (version 7, RFC 9562) like the database's
// integrator.uuid_v7(), for rows whose id is needed before they are written.
import { randomFillSync } from "node:crypto";

/** Random bytes each id takes: 12 + 62 random bits fit in 10 bytes (the variant takes 2 of one nibble). */
const RANDOM_BYTES_PER_ID = 10;
/**
 * Random bytes drawn for 256 ids at a time, as randomUUID keeps its own cache: a randomBytes call per id
 * was a visible share of a write's CPU time.
 */
const pool = Buffer.alloc(RANDOM_BYTES_PER_ID * 256);
let used = pool.length;
const HEX = Buffer.from("0123456789abcdef", "latin1");
/** The text is written here and read out as one string; the dashes and the version never change. */
const text = Buffer.from("00000000-0000-7000-0000-000000000000", "latin1");
/** Where each random nibble goes in the text: 3 after the version, 3 after the variant, then 12. */
const RANDOM_POSITIONS = [15, 16, 17, 20, 21, 22, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35];
const VARIANT_POSITION = 19;
/** Where the 12 hex digits of the time go, most significant first. */
const TIME_POSITIONS = [0, 1, 2, 3, 4, 5, 6, 7, 9, 10, 11, 12];

/**
 * A version 7 UUID: the 48-bit Unix time in milliseconds, then the version, 12 random bits, the variant
 * and 62 random bits. Written byte by byte into one buffer and read out as one string: an id was about
 * 700 bytes of short-lived strings when it was cut out of randomUUID's text (built by concatenation),
 * which made a batch's ids the largest share of its allocation.
 */
export function uuidV7(now: number = Date.now()): string {
  if (used + RANDOM_BYTES_PER_ID > pool.length) {
    randomFillSync(pool);
    used = 0;
  }
  let time = now;
  for (let index = TIME_POSITIONS.length - 1; index >= 0; index--) {
    text[TIME_POSITIONS[index] as number] = HEX[time % 16] as number;
    time = Math.floor(time / 16);
  }
  for (let index = 0; index < RANDOM_POSITIONS.length; index++) {
    const byte = pool[used + (index >> 1)] as number;
    text[RANDOM_POSITIONS[index] as number] = HEX[index % 2 === 0 ? byte >> 4 : byte & 0x0f] as number;
  }
  // The variant is binary 10 then two random bits: 8, 9, a or b.
  text[VARIANT_POSITION] = HEX[0x8 | ((pool[used + RANDOM_BYTES_PER_ID - 1] as number) & 0x03)] as number;
  used += RANDOM_BYTES_PER_ID;
  return text.toString("latin1");
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** True for a UUID in its canonical text form (any version, any case). */
export function isUuid(value: string): boolean {
  return UUID.test(value);
}
