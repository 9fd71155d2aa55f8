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

interface Visit {
  value: unknown;
  parent: Visit | undefined;
  key: string | number | undefined;
}

// A path is built only for what is reported: copying it at every level would make a deep value cost
// depth² (100 000 levels took minutes).
function pathOf(visit: Visit, root: (string | number)[]): (string | number)[] {
  const keys: (string | number)[] = [];
  for (let current: Visit | undefined = visit; current?.key !== undefined; current = current.parent)
    keys.push(current.key);
  return [...root, ...keys.reverse()];
}

/** Paths (below `root`) of strings and keys PostgreSQL cannot store. Iterative and linear: any depth is safe. */
export function unstorableTextPaths(value: unknown, root: (string | number)[], limit = 20): (string | number)[][] {
  const found: (string | number)[][] = [];
  const stack: Visit[] = [{ value, parent: undefined, key: undefined }];
  while (stack.length > 0 && found.length < limit) {
    const visit = stack.pop() as Visit;
    const current = visit.value;
    if (typeof current === "string") {
      if (UNSTORABLE.test(current)) found.push(pathOf(visit, root));
    } else if (Array.isArray(current)) {
      for (let index = current.length - 1; index >= 0; index--)
        stack.push({ value: current[index], parent: visit, key: index });
    } else if (current !== null && typeof current === "object") {
      for (const [key, child] of Object.entries(current as Record<string, unknown>)) {
        if (UNSTORABLE.test(key)) found.push(pathOf({ value: child, parent: visit, key }, root));
        else stack.push({ value: child, parent: visit, key });
      }
    }
  }
  return found;
}

/**
 * Paths (below `root`) of numbers JSON.parse could not represent: a literal such as 1e400 overflows to
 * Infinity (or -Infinity), which has no JSON form, so nothing downstream could store, hash or echo it.
 * Iterative and linear like unstorableTextPaths.
 */
export function nonFiniteNumberPaths(value: unknown, root: (string | number)[], limit = 20): (string | number)[][] {
  const found: (string | number)[][] = [];
  const stack: Visit[] = [{ value, parent: undefined, key: undefined }];
  while (stack.length > 0 && found.length < limit) {
    const visit = stack.pop() as Visit;
    const current = visit.value;
    if (typeof current === "number") {
      if (!Number.isFinite(current)) found.push(pathOf(visit, root));
    } else if (Array.isArray(current)) {
      for (let index = current.length - 1; index >= 0; index--)
        stack.push({ value: current[index], parent: visit, key: index });
    } else if (current !== null && typeof current === "object") {
      // Pushed in reverse so that paths come out in document order.
      const entries = Object.entries(current as Record<string, unknown>);
      for (let index = entries.length - 1; index >= 0; index--) {
        const [key, child] = entries[index] as [string, unknown];
        stack.push({ value: child, parent: visit, key });
      }
    }
  }
  return found;
}
