// HMAC-SHA256 signing and constant-time signature comparison (docs/decisions.md §5, §7).
// Known vectors were computed with Python 3's hmac module and hard-coded here.
import t from "tap";
import { hmacSha256Hex, signaturesEqual } from "../../foundation/signing.ts";
import { canonicalJson } from "../../foundation/canonical-json.ts";

const FOX = "f7bc83f430538424b13298e6aa6fb143ef4d59a14946175997479dbc2d1a3cd8";

t.test("hmac: known vectors, string or Buffer inputs", async (t) => {
  // hmac.new(b"key", b"The quick brown fox jumps over the lazy dog", hashlib.sha256).hexdigest()
  t.equal(hmacSha256Hex("key", "The quick brown fox jumps over the lazy dog"), FOX);
  t.equal(hmacSha256Hex(Buffer.from("key"), Buffer.from("The quick brown fox jumps over the lazy dog")), FOX);
  t.equal(hmacSha256Hex("", ""), "b613679a0814d9ec772f95d778c35fc5ff1697c493715653c6c712144292c5ad");
});

t.test("hmac: partner callback signature over both canonical serialisations", async (t) => {
  const body = {
    tenant_id: "6f1c2d9e-3b7a-4c41-9e0f-2a5b8c7d1e33",
    partner_key: "acme",
    payload: { event: "case.updated", event_id: "evt_1", note: "Zürich 日本 😀", n: 42, ok: false },
  };
  // Python: hmac.new(b"whsec_test", json.dumps(body, sort_keys=True, separators=(",", ":")).encode(), sha256)
  t.equal(
    hmacSha256Hex("whsec_test", canonicalJson(body, { asciiOnly: true })),
    "80edeee0763395355390ec11fd9a83451ccc1f84a5009b3f790529c2c15f792a",
  );
  // ... and with ensure_ascii=False (strings are signed as UTF-8)
  t.equal(
    hmacSha256Hex("whsec_test", canonicalJson(body)),
    "d1ecaea99fc11ef424229f9f92001bf6bb709450aa1bd2b849320110e24b6a85",
  );
});

t.test("compare: equal digests match, any changed digit does not", async (t) => {
  t.equal(signaturesEqual(FOX, FOX), true);
  t.equal(signaturesEqual(FOX, FOX.slice(0, -1) + "9"), false);
  t.equal(signaturesEqual(FOX, "0" + FOX.slice(1)), false);
  t.equal(signaturesEqual(FOX, hmacSha256Hex("other", "The quick brown fox jumps over the lazy dog")), false);
});

t.test("prefix: an optional sha256= prefix is accepted on the presented value", async (t) => {
  t.equal(signaturesEqual(FOX, `sha256=${FOX}`), true);
  t.equal(signaturesEqual(FOX, `SHA256=${FOX}`), true);
  t.equal(signaturesEqual(FOX, `sha256=sha256=${FOX}`), false, "only one prefix");
  t.equal(signaturesEqual(FOX, `sha1=${FOX}`), false);
  t.equal(signaturesEqual(FOX, `sha256:${FOX}`), false);
  t.equal(signaturesEqual(FOX, "sha256="), false);
});

t.test("case: hex digits compare case-insensitively", async (t) => {
  t.equal(signaturesEqual(FOX, FOX.toUpperCase()), true);
  t.equal(signaturesEqual(FOX.toUpperCase(), `sha256=${FOX}`), true);
});

t.test("length: a different length never matches", async (t) => {
  t.equal(signaturesEqual(FOX, FOX.slice(0, -2)), false);
  t.equal(signaturesEqual(FOX, `${FOX}00`), false);
  t.equal(signaturesEqual(FOX, FOX.slice(0, -1)), false, "odd number of digits");
  t.equal(signaturesEqual(FOX, ""), false);
  t.equal(signaturesEqual("", ""), false);
});

t.test("non-hex: anything but hex digits is refused", async (t) => {
  t.equal(signaturesEqual(FOX, `${FOX.slice(0, -2)}zz`), false);
  t.equal(signaturesEqual(FOX, `${FOX.slice(0, -2)}g0`), false, "Buffer.from would silently truncate at the g");
  t.equal(signaturesEqual(FOX, ` ${FOX}`), false);
  t.equal(signaturesEqual(FOX, `${FOX}\n`), false);
  t.equal(signaturesEqual(FOX, Buffer.from(FOX, "hex").toString("base64")), false);
  t.equal(signaturesEqual("not hex", "not hex"), false, "a non-hex expected value never matches");
});
