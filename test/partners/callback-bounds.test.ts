// Partner callbacks are open to anyone who can reach the API, so the work one costs before its signature
// is checked is bounded: the body's size (CALLBACK_MAX_BODY_BYTES, 413 before it is read), its payload's
// keys and depth (CALLBACK_MAX_KEYS, CALLBACK_MAX_DEPTH, 400 CALLBACK_PAYLOAD_INVALID before it is
// serialised), and the callbacks one client address has in flight at once (CALLBACK_CONCURRENCY_PER_ADDRESS,
// 429 with Retry-After beyond). receivePartnerCallback in openapi/openapi.yaml.
import http from "node:http";
import net from "node:net";
import t from "tap";
import { createTestTenant, startTestServer, type TestServer } from "../helpers/server.ts";
import { createTestPartner, signCallback } from "../helpers/partners.ts";
import { waitFor } from "../helpers/wait.ts";

/** A body of about `bytes` bytes whose payload holds many small keys (the shape of the reported flood). */
function manyKeys(tenantId: string, keys: number): { tenant_id: string; payload: Record<string, unknown> } {
  const payload: Record<string, unknown> = { event: "flood" };
  for (let i = 0; i < keys; i++) payload[`k${i}`] = i;
  return { tenant_id: tenantId, payload };
}

function post(server: TestServer, partnerKey: string, body: string, headers: Record<string, string> = {}) {
  return server.request(`/v1/callbacks/partner/${partnerKey}`, {
    method: "POST",
    body,
    headers: { "Content-Type": "application/json", ...headers },
  });
}

/** A callback sent from `localAddress` (any 127.x.y.z reaches the loopback listener). */
function postFrom(server: TestServer, localAddress: string, partnerKey: string, body: string): Promise<number> {
  const url = new URL(`/v1/callbacks/partner/${partnerKey}`, server.baseUrl);
  return new Promise((resolve, reject) => {
    const req = http.request(
      url,
      { method: "POST", localAddress, agent: false, headers: { "Content-Type": "application/json" } },
      (res) => {
        res.resume();
        res.on("end", () => resolve(res.statusCode ?? 0));
      },
    );
    req.on("error", reject);
    req.end(body);
  });
}

t.test(
  "the defaults refuse the reported flood: an ~860 KiB body with 60,000 keys is 413 before it is read",
  async (t) => {
    const server = await startTestServer(t);
    const tenant = await createTestTenant(server.services);
    const partner = await createTestPartner(server.services, { entitle: [tenant.tenantId] });
    const body = JSON.stringify(manyKeys(tenant.tenantId, 60_000));
    t.ok(body.length > 800 * 1024, `the body is ${Math.round(body.length / 1024)} KiB`);
    for (const partnerKey of [partner.partnerKey, "no-such-partner"]) {
      const res = await post(server, partnerKey, body, { "X-Callback-Signature": "00".repeat(32) });
      t.equal(res.status, 413, `${partnerKey}: 413`);
      const answer = await res.json();
      t.equal(answer.error.code, "PAYLOAD_TOO_LARGE");
      t.match(answer.error.message, /65536 bytes/, "the message names the callback limit");
    }
  },
);

t.test(
  "a declared length over the limit is answered 413 at once, before a byte of the body is sent, and the connection is closed",
  async (t) => {
    const server = await startTestServer(t);
    const { port } = new URL(server.baseUrl);
    const socket = net.connect(Number(port), "127.0.0.1");
    t.teardown(() => socket.destroy());
    // A generous deadline: without an answer the connection is given up and the test fails.
    socket.setTimeout(20_000, () => socket.destroy());
    socket.setEncoding("utf8");
    const answer = new Promise<string>((resolve) => {
      let text = "";
      socket.on("data", (chunk: string) => (text += chunk));
      socket.on("close", () => resolve(text));
    });
    // Headers only: a service that read the body before answering would wait for it until its request timeout.
    socket.write(
      "POST /v1/callbacks/partner/anyone HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" +
        `Content-Length: ${860 * 1024}\r\n\r\n`,
    );
    const text = await answer;
    t.match(text, /^HTTP\/1\.1 413 /);
    t.match(text, /\r\nConnection: close\r\n/i);
    t.match(text, /"PAYLOAD_TOO_LARGE"/);
  },
);

t.test("body, keys and depth bounds follow their settings", async (t) => {
  const server = await startTestServer(t, {
    env: { CALLBACK_MAX_BODY_BYTES: "4096", CALLBACK_MAX_KEYS: "50", CALLBACK_MAX_DEPTH: "4" },
  });
  const tenant = await createTestTenant(server.services);
  const partner = await createTestPartner(server.services, { entitle: [tenant.tenantId] });
  const signed = (body: { tenant_id: string; payload: Record<string, unknown> }) =>
    JSON.stringify({ ...body, signature: signCallback(partner.callbackSecret, partner.partnerKey, body) });

  t.test("a body over CALLBACK_MAX_BODY_BYTES is 413, signed or not; one within is accepted", async (t) => {
    const over = { tenant_id: tenant.tenantId, payload: { event: "big", note: "x".repeat(4200) } };
    const res = await post(server, partner.partnerKey, signed(over));
    t.equal(res.status, 413);
    t.equal((await res.json()).error.code, "PAYLOAD_TOO_LARGE");
    const within = { tenant_id: tenant.tenantId, payload: { event: "big", note: "x".repeat(3000) } };
    t.equal((await post(server, partner.partnerKey, signed(within))).status, 202);
  });

  t.test("a chunked body (no Content-Length) over the limit is 413 too", async (t) => {
    const text = JSON.stringify({ tenant_id: tenant.tenantId, payload: { event: "big", note: "y".repeat(8000) } });
    const res = await server.request(`/v1/callbacks/partner/${partner.partnerKey}`, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: new ReadableStream({
        start(controller) {
          controller.enqueue(new TextEncoder().encode(text));
          controller.close();
        },
      }),
      duplex: "half",
    } as RequestInit);
    t.equal(res.status, 413);
  });

  t.test(
    "a payload with more keys than CALLBACK_MAX_KEYS (at any depth) is 400 CALLBACK_PAYLOAD_INVALID",
    async (t) => {
      const flat = manyKeys(tenant.tenantId, 50);
      const res = await post(server, partner.partnerKey, signed(flat));
      t.equal(res.status, 400);
      const answer = await res.json();
      t.equal(answer.error.code, "CALLBACK_PAYLOAD_INVALID");
      t.same(answer.error.details.errors[0].loc, ["body", "payload"]);
      t.match(answer.error.details.errors[0].msg, /at most 50 keys/);
      const nested = {
        tenant_id: tenant.tenantId,
        payload: { event: "n", a: { list: Array.from({ length: 60 }, () => 1) } },
      };
      t.equal((await post(server, partner.partnerKey, signed(nested))).status, 400, "array items count as well");
      const fits = { tenant_id: tenant.tenantId, payload: { event: "n", a: { list: [1, 2, 3] } } };
      t.equal((await post(server, partner.partnerKey, signed(fits))).status, 202);
    },
  );

  t.test("a payload deeper than CALLBACK_MAX_DEPTH is 400 CALLBACK_PAYLOAD_INVALID", async (t) => {
    const deep = { tenant_id: tenant.tenantId, payload: { event: "deep", a: { b: { c: { d: { e: 1 } } } } } };
    const res = await post(server, partner.partnerKey, signed(deep));
    t.equal(res.status, 400);
    const answer = await res.json();
    t.equal(answer.error.code, "CALLBACK_PAYLOAD_INVALID");
    t.match(answer.error.details.errors[0].msg, /at most 4 levels/);
    const shallow = { tenant_id: tenant.tenantId, payload: { event: "deep", a: { b: { c: { d: 1 } } } } };
    t.equal((await post(server, partner.partnerKey, signed(shallow))).status, 202);
  });
});

t.test(
  "callbacks in flight from one address are capped by CALLBACK_CONCURRENCY_PER_ADDRESS: beyond, 429 with Retry-After; other addresses go on",
  async (t) => {
    const server = await startTestServer(t, { env: { CALLBACK_CONCURRENCY_PER_ADDRESS: "2" } });
    const tenant = await createTestTenant(server.services);
    const partner = await createTestPartner(server.services, { entitle: [tenant.tenantId] });
    const body = JSON.stringify({ tenant_id: tenant.tenantId, payload: { event: "slow" }, signature: "00" });
    const { port } = new URL(server.baseUrl);

    // Two callbacks whose bodies never finish arriving: each holds its slot until its connection closes.
    const held: net.Socket[] = [];
    const answers: Promise<string>[] = [];
    for (let i = 0; i < 2; i++) {
      const socket = net.connect(Number(port), "127.0.0.1");
      socket.setEncoding("utf8");
      answers.push(
        new Promise((resolve) => {
          let text = "";
          socket.on("data", (chunk: string) => (text += chunk));
          socket.on("close", () => resolve(text));
        }),
      );
      socket.write(
        `POST /v1/callbacks/partner/${partner.partnerKey} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n` +
          `Content-Length: ${body.length}\r\nConnection: close\r\n\r\n${body.slice(0, 10)}`,
      );
      held.push(socket);
    }
    t.teardown(() => held.forEach((socket) => socket.destroy()));

    // Once the server has seen both, a third callback from the same address is refused at once.
    const refused = await waitFor(
      () => post(server, partner.partnerKey, body),
      (res) => res.status === 429,
      { seconds: 10 },
    );
    t.equal(refused.status, 429, "the third concurrent callback is refused");
    t.equal(refused.headers.get("retry-after"), "1");
    const answer = await refused.json();
    t.equal(answer.error.code, "RATE_LIMITED");
    t.match(answer.error.details, { scope: "callback_concurrency", limit: 2 });

    t.equal(await postFrom(server, "127.0.0.2", partner.partnerKey, body), 400, "another address is not refused");

    // The held callbacks finish (signature wrong: 400); their slots are free again.
    for (const socket of held) socket.write(body.slice(10));
    for (const text of await Promise.all(answers)) t.match(text, /^HTTP\/1\.1 400 /, "a held callback is answered");
    const after = await waitFor(
      () => post(server, partner.partnerKey, body),
      (res) => res.status !== 429,
      { seconds: 10 },
    );
    t.equal(after.status, 400, "after they finished, the address is served again");
  },
);
