// The body guard's one walk (foundation/json-limits.ts): unstorable text and non-finite numbers by path, in
// document order, nothing listed twice below an unstorable key, at most `limit` of each.
import t from "tap";
import { parseMarkingInexactIntegers, shapeExcess, unrepresentablePaths } from "../../foundation/json-limits.ts";

t.test("both kinds are found in one walk, in document order", async (t) => {
  const body = JSON.parse(
    '{"a": "x\\u0000", "b": [1e400, "ok", "\\ud800"], "c": {"d": -1e400, "e\\u0000": 1}, "f": "y\\u0000"}',
  ) as unknown;
  t.same(unrepresentablePaths(body, ["body"]), {
    unstorableText: [
      ["body", "a"],
      ["body", "b", 2],
      ["body", "c", "e\u0000"],
      ["body", "f"],
    ],
    nonFiniteNumbers: [
      ["body", "b", 0],
      ["body", "c", "d"],
    ],
    inexactIntegers: [],
  });
});

t.test("below an unstorable key text is not listed again, numbers still are", async (t) => {
  const body = JSON.parse('{"k\\u0000": {"s": "\\u0000", "n": 1e400}}') as unknown;
  t.same(unrepresentablePaths(body, []), {
    unstorableText: [["k\u0000"]],
    nonFiniteNumbers: [["k\u0000", "n"]],
    inexactIntegers: [],
  });
});

t.test("each list stops at the limit", async (t) => {
  const body = Array.from({ length: 50 }, (_, i) => (i % 2 === 0 ? "\u0000" : Number.POSITIVE_INFINITY));
  const found = unrepresentablePaths(body, [], 3);
  t.same(found.unstorableText, [[0], [2], [4]]);
  t.same(found.nonFiniteNumbers, [[1], [3], [5]]);
});

t.test("integer literals beyond ±(2^53−1) are found in the JSON text, by path", async (t) => {
  const text =
    '{"a": 9007199254740991, "b": [9007199254740992, "12345678901234567890"], "c": {"d": -1e16, "e": 1.5e300}}';
  t.same(unrepresentablePaths(parseMarkingInexactIntegers(Buffer.from(text)), ["body"]).inexactIntegers, [
    ["body", "b", 0],
  ]);
});

t.test("text without a run of 16 digits is not parsed again", async (t) => {
  t.equal(parseMarkingInexactIntegers('{"a": 123456789012345, "b": "x"}'), undefined);
});

t.test("shapeExcess: depth as depthOf counts it, members (keys and array items) at every depth", async (t) => {
  t.equal(shapeExcess({ a: { b: 1 } }, { maxDepth: 2, maxKeys: 10 }), undefined);
  t.equal(shapeExcess({ a: { b: {} } }, { maxDepth: 2, maxKeys: 10 }), "depth");
  t.equal(shapeExcess({ a: [1, 2], b: { c: 1 } }, { maxDepth: 5, maxKeys: 5 }), undefined, "a, 1, 2, b, c: five");
  t.equal(shapeExcess({ a: [1, 2, 3], b: { c: 1 } }, { maxDepth: 5, maxKeys: 5 }), "keys", "six");
  t.equal(shapeExcess("text", { maxDepth: 1, maxKeys: 1 }), undefined, "a scalar has no members");
  const wide: Record<string, number> = {};
  for (let i = 0; i < 100_000; i++) wide[`k${i}`] = i;
  t.equal(shapeExcess(wide, { maxDepth: 32, maxKeys: 1000 }), "keys");
  let deep: unknown = 1;
  for (let i = 0; i < 100_000; i++) deep = [deep];
  t.equal(shapeExcess(deep, { maxDepth: 32, maxKeys: 1_000_000 }), "depth", "any depth, iteratively");
});
