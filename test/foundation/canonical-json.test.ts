// Canonical JSON (docs/decisions.md §5 webhook bodies, §7 callback signatures, idempotency fingerprints).
// Expected strings were produced with Python 3:
//   json.dumps(obj, sort_keys=True, separators=(",", ":"))                     (asciiOnly)
//   json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False) (UTF-8)
// and hashlib.sha256(<UTF-8 form>.encode()).hexdigest(), then hard-coded here.
import t from "tap";
import { asciiEscaped, canonicalJson, canonicalJsonHash } from "../../foundation/canonical-json.ts";

const callbackBody = {
  tenant_id: "6f1c2d9e-3b7a-4c41-9e0f-2a5b8c7d1e33",
  partner_key: "acme",
  payload: { event: "case.updated", event_id: "evt_1", note: "Zürich 日本 😀", n: 42, ok: false },
};

t.test("key order: keys sorted at the top level, compact separators", async (t) => {
  const value = { b: 1, a: 2, c: "x" };
  t.equal(canonicalJson(value), '{"a":2,"b":1,"c":"x"}');
  t.equal(canonicalJson(value, { asciiOnly: true }), '{"a":2,"b":1,"c":"x"}');
  // Integer-like keys, which JS enumerates first, and case: plain code point order.
  t.equal(canonicalJson({ B: 1, a: 2, _: 3, "1": 4 }), '{"1":4,"B":1,"_":3,"a":2}');
  t.equal(canonicalJson({ "10": 1, "9": 2, "1": 3 }), '{"1":3,"10":1,"9":2}');
});

t.test("key order: sorted at every depth, arrays keep their order", async (t) => {
  const value = { z: { y: [3, { b: true, a: null }], x: [] }, a: {} };
  const expected = '{"a":{},"z":{"x":[],"y":[3,{"a":null,"b":true}]}}';
  t.equal(canonicalJson(value), expected);
  t.equal(canonicalJson(value, { asciiOnly: true }), expected);
  t.equal(
    canonicalJson([{ b: 1, a: [{ d: 1, c: 2 }] }, "s", 1, true, null]),
    '[{"a":[{"c":2,"d":1}],"b":1},"s",1,true,null]',
  );
  t.equal(canonicalJson({ a: 1, b: [1, 2] }), '{"a":1,"b":[1,2]}', "the contract's own example");
});

t.test("key order: by code point like Python, not by UTF-16 code unit", async (t) => {
  // U+1F600 is a surrogate pair (0xD83D...) in UTF-16, which would sort before U+FF61.
  const value = { "😀": 1, "｡": 2, a: 3 };
  t.equal(canonicalJson(value, { asciiOnly: true }), '{"a":3,"\\uff61":2,"\\ud83d\\ude00":1}');
  t.equal(canonicalJson(value), '{"a":3,"｡":2,"😀":1}');
  const nonAscii = { é: 1, e: 2, 日本: 3, z: 4 };
  t.equal(canonicalJson(nonAscii, { asciiOnly: true }), '{"e":2,"z":4,"\\u00e9":1,"\\u65e5\\u672c":3}');
  t.equal(canonicalJson(nonAscii), '{"e":2,"z":4,"é":1,"日本":3}');
});

t.test("asciiOnly: non-ASCII escaped as lowercase \\uXXXX with surrogate pairs, like Python", async (t) => {
  const value = { city: "Zürich", jp: "日本", emoji: "😀" };
  t.equal(
    canonicalJson(value, { asciiOnly: true }),
    '{"city":"Z\\u00fcrich","emoji":"\\ud83d\\ude00","jp":"\\u65e5\\u672c"}',
  );
  t.equal(
    canonicalJson(callbackBody, { asciiOnly: true }),
    '{"partner_key":"acme","payload":{"event":"case.updated","event_id":"evt_1","n":42,"note":"Z\\u00fcrich \\u65e5\\u672c \\ud83d\\ude00","ok":false},"tenant_id":"6f1c2d9e-3b7a-4c41-9e0f-2a5b8c7d1e33"}',
  );
  t.match(canonicalJson(callbackBody, { asciiOnly: true }), /^[\x20-\x7e]*$/, "pure printable ASCII");
});

t.test("utf8: without asciiOnly, text is written as JSON.stringify writes it", async (t) => {
  const value = { city: "Zürich", jp: "日本", emoji: "😀" };
  t.equal(canonicalJson(value), '{"city":"Zürich","emoji":"😀","jp":"日本"}');
  t.equal(
    canonicalJson(callbackBody),
    '{"partner_key":"acme","payload":{"event":"case.updated","event_id":"evt_1","n":42,"note":"Zürich 日本 😀","ok":false},"tenant_id":"6f1c2d9e-3b7a-4c41-9e0f-2a5b8c7d1e33"}',
  );
  t.equal(canonicalJson(callbackBody), canonicalJson(JSON.parse(JSON.stringify(callbackBody))), "round-trips");
});

t.test("escapes: control characters, quotes and backslashes match Python in both modes", async (t) => {
  const value = { s: 'tab\tnl\ncr\rq"bs\\ del\x7f ls\u2028 nul\x00 bell\x07' };
  t.equal(
    canonicalJson(value, { asciiOnly: true }),
    '{"s":"tab\\tnl\\ncr\\rq\\"bs\\\\ del\\u007f ls\\u2028 nul\\u0000 bell\\u0007"}',
  );
  t.equal(canonicalJson(value), '{"s":"tab\\tnl\\ncr\\rq\\"bs\\\\ del\x7f ls\u2028 nul\\u0000 bell\\u0007"}');
  t.equal(canonicalJson("\ud800"), '"\\ud800"', "a lone surrogate is escaped, so the output is always valid UTF-16");
  t.equal(canonicalJson("\ud800", { asciiOnly: true }), '"\\ud800"');
});

t.test("numbers: written as JSON.stringify writes them", async (t) => {
  t.equal(
    canonicalJson({ a: 0, b: -1, c: 1.5, d: 1e21, e: 1e-7, f: 1.0, g: -0 }),
    '{"a":0,"b":-1,"c":1.5,"d":1e+21,"e":1e-7,"f":1,"g":0}',
  );
  t.equal(canonicalJson(42), "42");
});

t.test("undefined: undefined properties are omitted, undefined array items become null", async (t) => {
  t.equal(canonicalJson({ a: undefined, b: 1, c: { d: undefined } }), '{"b":1,"c":{}}');
  t.equal(canonicalJson([undefined, 1]), "[null,1]");
  t.throws(() => canonicalJson(undefined), TypeError, "a top-level undefined has no JSON form");
});

t.test("toJSON: honoured like JSON.stringify (dates become ISO strings)", async (t) => {
  t.equal(canonicalJson({ at: new Date("2024-01-02T03:04:05.000Z") }), '{"at":"2024-01-02T03:04:05.000Z"}');
  t.equal(canonicalJson({ x: { toJSON: () => ({ b: 2, a: 1 }) } }), '{"x":{"a":1,"b":2}}');
  t.equal(
    canonicalJson(Object.assign(Object.create(null) as object, { b: 1, a: 2 })),
    '{"a":2,"b":1}',
    "null-prototype objects",
  );
});

t.test("rejects: non-finite numbers, bigint, functions, symbols and cycles throw", async (t) => {
  for (const bad of [
    NaN,
    Infinity,
    -Infinity,
    { a: [NaN] },
    1n,
    { a: 1n },
    () => 1,
    { f: () => 1 },
    Symbol("s"),
    { s: Symbol("s") },
  ]) {
    t.throws(() => canonicalJson(bad), TypeError, String(typeof bad));
  }
  const cyclic: Record<string, unknown> = { a: 1 };
  cyclic.self = cyclic;
  t.throws(() => canonicalJson(cyclic), { name: "TypeError", message: /cyclic/ });
  const list: unknown[] = [];
  list.push({ list });
  t.throws(() => canonicalJson(list), { message: /cyclic/ });
  const shared = { x: 1 };
  t.equal(
    canonicalJson({ a: shared, b: [shared, shared] }),
    '{"a":{"x":1},"b":[{"x":1},{"x":1}]}',
    "a shared, non-cyclic object is fine",
  );
});

t.test("canonicalJsonHash: hex SHA-256 of the UTF-8 canonical form", async (t) => {
  t.equal(
    canonicalJsonHash({ b: 1, a: 2, c: "x" }),
    "38b5d9a6be58441e40ba736c50ec9ac004336e9818b647f78fabfd53c64cd302",
  );
  t.equal(
    canonicalJsonHash({ city: "Zürich", jp: "日本", emoji: "😀" }),
    "db2d726aad80ebb8de3b879a5d32a26feb96073d52f608874f5a49f7b738d789",
  );
  t.equal(canonicalJsonHash(callbackBody), "003a11b06e5d5990d945901b97be4783acaa6a7d4c7e262304bdbb2f4f216838");
  t.equal(
    canonicalJsonHash({ a: 2, c: "x", b: 1 }),
    canonicalJsonHash({ c: "x", b: 1, a: 2 }),
    "independent of key order",
  );
  t.not(canonicalJsonHash({ a: 1 }), canonicalJsonHash({ a: "1" }));
});

t.test("the ASCII form is the UTF-8 form with its non-ASCII characters escaped (one walk serves both)", async (t) => {
  const values: unknown[] = [
    callbackBody,
    { "😀": { ключ: ["Zoë", "\u007f", "\ud800 lone", "東京"] }, a: [1.5, -0, 1e21, null, true] },
    { plain: "ascii only", n: [1, 2, 3] },
    "\u2028\u2029 line separators",
  ];
  for (const [index, value] of values.entries())
    t.equal(asciiEscaped(canonicalJson(value)), canonicalJson(value, { asciiOnly: true }), `value ${index}`);
});
