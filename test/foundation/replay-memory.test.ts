// The in-process memory of finished Idempotency-Key responses (foundation/replay-memory.ts): expiry
// with its margin, the bound in bytes, and eviction that keeps one tenant's flood to itself.
import t from "tap";
import { EXPIRY_MARGIN_MS, ReplayMemory, type FinishedResponse } from "../../foundation/replay-memory.ts";

const response = (json: string, expiresAt: number): FinishedResponse => ({
  fingerprint: "f".repeat(64),
  status: 201,
  json,
  expiresAt,
});

t.test("an entry is served until the margin before its expiry, then forgotten", async (t) => {
  let now = 1_000_000;
  const memory = new ReplayMemory(1 << 20, () => now);
  const expiresAt = now + 60_000;
  memory.remember("tenant-a", "key-1", response('{"id":1}', expiresAt));
  t.equal(memory.find("key-1")?.json, '{"id":1}');
  now = expiresAt - EXPIRY_MARGIN_MS - 1;
  t.ok(memory.find("key-1"), "still served just before the margin");
  now = expiresAt - EXPIRY_MARGIN_MS;
  t.equal(memory.find("key-1"), undefined, "not served within the margin");
  t.equal(memory.size, 0, "and dropped");
  t.equal(memory.bytes, 0);
});

t.test("a response already within the margin, or larger than the whole memory, is not kept", async (t) => {
  const now = 5_000_000;
  const memory = new ReplayMemory(2_000, () => now);
  memory.remember("tenant-a", "soon", response("{}", now + EXPIRY_MARGIN_MS));
  memory.remember("tenant-a", "large", response("x".repeat(2_000), now + 3_600_000));
  t.equal(memory.size, 0);
  const none = new ReplayMemory(0, () => now);
  none.remember("tenant-a", "small", response("{}", now + 3_600_000));
  t.equal(none.find("small"), undefined, "a memory of 0 bytes keeps nothing");
  t.notOk(none.keeps, "and says so");
  t.ok(memory.keeps);
});

t.test("remembering a key again replaces its entry and its bytes", async (t) => {
  const memory = new ReplayMemory(1 << 20);
  memory.remember("tenant-a", "key", response('{"a":1}', Date.now() + 3_600_000));
  const before = memory.bytes;
  memory.remember("tenant-a", "key", response('{"a":1,"b":2}', Date.now() + 3_600_000));
  t.equal(memory.size, 1);
  t.equal(memory.bytes, before + 2 * '"b":2,'.length);
  t.equal(memory.find("key")?.json, '{"a":1,"b":2}');
});

t.test("the bound holds; the least recently used entry goes first", async (t) => {
  const expiresAt = Date.now() + 3_600_000;
  const one = new ReplayMemory(1 << 20);
  one.remember("t", "probe", response("x".repeat(100), expiresAt));
  const entryBytes = one.bytes;
  const memory = new ReplayMemory(entryBytes * 3);
  for (const key of ["a", "b", "c"]) memory.remember("t", key, response("x".repeat(100), expiresAt));
  t.equal(memory.size, 3);
  t.ok(memory.find("a"), "a is used again, so b is now the least recently used");
  memory.remember("t", "d", response("x".repeat(100), expiresAt));
  t.equal(memory.size, 3);
  t.ok(memory.bytes <= entryBytes * 3);
  t.equal(memory.find("b"), undefined, "b went");
  t.ok(memory.find("a") && memory.find("c") && memory.find("d"));
});

t.test("a tenant flooding keys evicts its own responses, not other tenants'", async (t) => {
  const expiresAt = Date.now() + 3_600_000;
  const body = "x".repeat(200);
  const probe = new ReplayMemory(1 << 20);
  probe.remember("quiet", "q0", response(body, expiresAt));
  const memory = new ReplayMemory(probe.bytes * 10);
  for (let i = 0; i < 3; i++) memory.remember("quiet", `q${i}`, response(body, expiresAt));
  for (let i = 0; i < 1_000; i++) memory.remember("flood", `f${i}`, response(body, expiresAt));
  for (let i = 0; i < 3; i++) t.ok(memory.find(`q${i}`), `the quiet tenant's q${i} is still kept`);
  t.ok(memory.find("f999"), "the flood's newest is kept");
  t.equal(memory.find("f0"), undefined, "the flood's oldest went");
  t.ok(memory.bytes <= probe.bytes * 10);

  // A tenant under its even share that needs room takes it from the least recently used entry overall.
  memory.remember("newcomer", "n0", response(body, expiresAt));
  t.ok(memory.find("n0"));
  for (let i = 0; i < 3; i++) t.ok(memory.find(`q${i}`), `q${i} is still kept: the room came from the flood`);
  t.ok(memory.bytes <= probe.bytes * 10);
});
