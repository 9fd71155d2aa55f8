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

// NUL cannot be stored in PostgreSQL text or jsonb; an unpaired surrogate is not Unicode at all.
const UNSTORABLE = /\u0000|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** Paths (below `root`) of strings and keys PostgreSQL cannot store. Iterative: any depth is safe. */
export function unstorableTextPaths(value: unknown, root: (string | number)[], limit = 20): (string | number)[][] {
  const found: (string | number)[][] = [];
  const stack: [unknown, (string | number)[]][] = [[value, root]];
  while (stack.length > 0 && found.length < limit) {
    const [current, path] = stack.pop() as [unknown, (string | number)[]];
    if (typeof current === "string") {
      if (UNSTORABLE.test(current)) found.push(path);
    } else if (Array.isArray(current)) {
      for (let index = current.length - 1; index >= 0; index--) stack.push([current[index], [...path, index]]);
    } else if (current !== null && typeof current === "object") {
      for (const [key, child] of Object.entries(current as Record<string, unknown>)) {
        if (UNSTORABLE.test(key)) found.push([...path, key]);
        else stack.push([child, [...path, key]]);
      }
    }
  }
  return found;
}
