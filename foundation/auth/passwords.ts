// Passwords and client secrets are stored as scrypt hashes: scrypt$N$r$p$salt$hash (base64url).
import { randomBytes, scrypt as scryptCallback, timingSafeEqual, type ScryptOptions } from "node:crypto";

const N = 16384;
const R = 8;
const P = 1;
const KEY_LENGTH = 32;

function scrypt(secret: string, salt: Buffer, keyLength: number, options: ScryptOptions): Promise<Buffer> {
  return new Promise((resolve, reject) =>
    scryptCallback(secret, salt, keyLength, options, (error, key) => (error ? reject(error) : resolve(key))),
  );
}

export async function hashSecret(secret: string): Promise<string> {
  const salt = randomBytes(16);
  const key = await scrypt(secret, salt, KEY_LENGTH, { N, r: R, p: P });
  return ["scrypt", N, R, P, salt.toString("base64url"), key.toString("base64url")].join("$");
}

export async function verifySecret(secret: string, stored: string): Promise<boolean> {
  const [scheme, n, r, p, salt, hash] = stored.split("$");
  if (scheme !== "scrypt" || !salt || !hash) return false;
  const expected = Buffer.from(hash, "base64url");
  const actual = await scrypt(secret, Buffer.from(salt, "base64url"), expected.length, {
    N: Number(n),
    r: Number(r),
    p: Number(p),
  });
  return actual.length === expected.length && timingSafeEqual(actual, expected);
}

/** A hash to compare against when the principal does not exist, so timing does not reveal it. */
export const DUMMY_HASH = "scrypt$16384$8$1$AAAAAAAAAAAAAAAAAAAAAA$AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA";

/** Thrown when too many secret checks already wait for a slot: the caller answers 503 at once. */
export class HashingBusy extends Error {
  override name = "HashingBusy";
}

/**
 * Bounds the scrypt work of one process: at most `concurrency` checks run at once (each holds a libuv
 * thread for 50-80 ms), at most `queueMax` wait; beyond that a check is refused at once, so a flood of
 * guesses cannot hold the CPU or queue without bound.
 */
export interface HashGate {
  verify(secret: string, stored: string): Promise<boolean>;
  /** Checks running and waiting now (for tests and metrics). */
  load(): { running: number; waiting: number };
}

export function createHashGate(limits: { concurrency: number; queueMax: number }): HashGate {
  let running = 0;
  const waiting: (() => void)[] = [];
  const release = () => {
    const next = waiting.shift();
    if (next) next();
    else running -= 1;
  };
  return {
    async verify(secret, stored) {
      if (running >= limits.concurrency) {
        if (waiting.length >= limits.queueMax) throw new HashingBusy("too many secret checks are waiting");
        await new Promise<void>((resolve) => waiting.push(resolve));
      } else running += 1;
      try {
        return await verifySecret(secret, stored);
      } finally {
        release();
      }
    },
    load: () => ({ running, waiting: waiting.length }),
  };
}
