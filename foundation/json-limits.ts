// Guards for parsed JSON from untrusted callers: nesting can be very deep (a 1 MiB body can nest
// half a million levels), and JSON strings can hold what PostgreSQL cannot store.

/** Nesting depth of a JSON value, counted no further than `limit + 1` (so hostile depth costs little). */
export function depthOf(value: unknown, limit: number): number {
  if (value === null || typeof value !== "object") return 0;
  if (limit < 0) return 1;
  const children = Array.isArray(value) ? value : Object.values(value as Record<string, unknown>);
  let deepest = 0;
  for (const child of children) {
    deepest = Math.max(deepest, depthOf(child, limit - 1));
    if (deepest > limit) break;
  }
  return 1 + deepest;
}

/** Which bound a JSON value exceeds first, if any: its nesting depth (as depthOf counts it) or its keys. */
export type ShapeExcess = "depth" | "keys";

/**
 * Checks a value against a nesting depth and a number of members (object keys and array items, at every
 * depth) in one iterative walk that stops at the first excess, so a hostile value costs at most
 * `maxKeys` steps.
 */
export function shapeExcess(value: unknown, bounds: { maxDepth: number; maxKeys: number }): ShapeExcess | undefined {
  let members = 0;
  const stack: { value: unknown; depth: number }[] = [{ value, depth: 0 }];
  while (stack.length > 0) {
    const { value: current, depth } = stack.pop() as { value: unknown; depth: number };
    if (current === null || typeof current !== "object") continue;
    if (depth + 1 > bounds.maxDepth) return "depth";
    const children = Array.isArray(current) ? current : Object.values(current as Record<string, unknown>);
    members += children.length;
    if (members > bounds.maxKeys) return "keys";
    for (const child of children) stack.push({ value: child, depth: depth + 1 });
  }
  return undefined;
}

// NUL cannot be stored in PostgreSQL text or jsonb; an unpaired surrogate is not Unicode at all.
const UNSTORABLE = /\u0000|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

export type JsonPath = (string | number)[];

/** What a parsed body holds that could not be stored or written back, by path (below `root`). */
export interface UnrepresentablePaths {
  /** Strings and keys PostgreSQL cannot store (NUL, unpaired surrogates); nothing below such a key is listed again. */
  unstorableText: JsonPath[];
  /**
   * Numbers JSON.parse could not represent: a literal such as 1e400 overflows to Infinity (or -Infinity),
   * which has no JSON form, so nothing downstream could store, hash or echo it.
   */
  nonFiniteNumbers: JsonPath[];
  /**
   * Integer literals beyond ±(2^53−1) (RFC 7493 I-JSON): JSON.parse rounds them to the nearest double
   * (9007199254740993 becomes 9007199254740992) without a trace, so they are found only in a value parsed
   * by `parseMarkingInexactIntegers`.
   */
  inexactIntegers: JsonPath[];
}

/** An object or array being walked: what it is, where it is, and how far its members have been visited. */
interface Frame {
  container: Record<string, unknown> | unknown[];
  /** An object's own keys, in order; undefined for an array. */
  keys: string[] | undefined;
  next: number;
  /** Its key in its parent; undefined at the root. */
  key: string | number | undefined;
  /** Below a key already reported, whose text is not reported again. */
  silent: boolean;
}

/**
 * Every kind of path in one walk of the value, in document order, at most `limit` of each. Iterative and
 * linear: any depth is safe. It holds one frame for each open object or array and builds a path only for
 * what it reports (copying a path at every level made a deep value cost depth²; a record for every member
 * made the walk a large share of a batch's allocation).
 */
export function unrepresentablePaths(value: unknown, root: JsonPath, limit = 20): UnrepresentablePaths {
  const found: UnrepresentablePaths = { unstorableText: [], nonFiniteNumbers: [], inexactIntegers: [] };
  const frames: Frame[] = [];
  const report = (list: JsonPath[], key: string | number | undefined) => {
    if (list.length >= limit) return;
    const path = [...root];
    for (const frame of frames) if (frame.key !== undefined) path.push(frame.key);
    if (key !== undefined) path.push(key);
    list.push(path);
  };
  const visit = (current: unknown, key: string | number | undefined, silent: boolean) => {
    if (typeof current === "string") {
      if (!silent && UNSTORABLE.test(current)) report(found.unstorableText, key);
    } else if (typeof current === "number") {
      if (!Number.isFinite(current)) report(found.nonFiniteNumbers, key);
    } else if (current === INEXACT_INTEGER) {
      report(found.inexactIntegers, key);
    } else if (Array.isArray(current)) {
      frames.push({ container: current, keys: undefined, next: 0, key, silent });
    } else if (current !== null && typeof current === "object") {
      const container = current as Record<string, unknown>;
      frames.push({ container, keys: Object.keys(container), next: 0, key, silent });
    }
  };
  visit(value, undefined, false);
  while (
    frames.length > 0 &&
    (found.unstorableText.length < limit ||
      found.nonFiniteNumbers.length < limit ||
      found.inexactIntegers.length < limit)
  ) {
    const frame = frames[frames.length - 1] as Frame;
    const { container, keys } = frame;
    if (frame.next >= (keys ?? (container as unknown[])).length) {
      frames.pop();
      continue;
    }
    const index = frame.next++;
    if (keys === undefined) {
      visit((container as unknown[])[index], index, frame.silent);
      continue;
    }
    const key = keys[index] as string;
    const badKey = !frame.silent && UNSTORABLE.test(key);
    if (badKey) report(found.unstorableText, key);
    visit((container as Record<string, unknown>)[key], key, frame.silent || badKey);
  }
  return found;
}

/** Stands in for an integer literal JSON.parse rounded, in a value from `parseMarkingInexactIntegers`. */
const INEXACT_INTEGER: unique symbol = Symbol("inexact integer");

/** What can hold an inexact integer: a run of 16 digits (2^53 has 16), in a number or anywhere else. */
function hasLongDigitRun(text: Uint8Array | string): boolean {
  let run = 0;
  for (let index = 0; index < text.length; index++) {
    const code = typeof text === "string" ? text.charCodeAt(index) : (text[index] as number);
    run = code >= 0x30 && code <= 0x39 ? run + 1 : 0;
    if (run >= 16) return true;
  }
  return false;
}

type SourceReviver = (key: string, value: unknown, context: { source?: string }) => unknown;

/**
 * The JSON text parsed again with every integer literal beyond ±(2^53−1) replaced by a marker that
 * `unrepresentablePaths` reports, or undefined when the text cannot hold one (no run of 16 digits: the
 * usual case, which costs one scan and no second parse). JSON.parse's reviver sees each number's source
 * text (Node 21+); a plain parse has already rounded it.
 */
export function parseMarkingInexactIntegers(text: Uint8Array | string): unknown {
  if (!hasLongDigitRun(text)) return undefined;
  // TextDecoder drops a leading byte order mark, as body-parser does.
  const json = typeof text === "string" ? text : new TextDecoder().decode(text);
  const reviver: SourceReviver = (_key, value, context) =>
    typeof value === "number" &&
    !Number.isSafeInteger(value) &&
    Number.isFinite(value) &&
    /^-?[0-9]+$/.test(context.source ?? "")
      ? INEXACT_INTEGER
      : value;
  return JSON.parse(json, reviver as Parameters<typeof JSON.parse>[1]);
}
