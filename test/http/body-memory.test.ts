// The request bodies a process holds at once are bounded (LOAD_SHED_BODY_MEMORY_MB): a body that would
// pass the bound is refused at once with 503 SERVICE_UNAVAILABLE (reason body_memory) and Retry-After,
// before it is read, and changes nothing; smaller bodies that fit and bodiless requests go on; once the
// held body's answer is sent, the refused one is served.
import http from "node:http";
import t from "tap";
import { processRegistry } from "../../foundation/metrics.ts";
import { createTestTenant, startTestServer } from "../helpers/server.ts";
import { waitFor } from "../helpers/wait.ts";

const MiB = 2 ** 20;

/** A valid batch of about `bytes` bytes (its items' metadata pads it). */
function batchOf(bytes: number, reference: string): string {
  const items = Array.from({ length: 100 }, (_, i) => ({
    filename: `doc-${i}.pdf`,
    file_size: 1000 + i,
    mime_type: "application/pdf",
    item_metadata: { note: "x".repeat(Math.floor(bytes / 100) - 120) },
  }));
  return JSON.stringify({ items, external_reference: reference });
}

async function held(): Promise<number> {
  const metric = await processRegistry.getSingleMetric("integrator_http_body_bytes_held")?.get();
  return metric?.values[0]?.value ?? 0;
}

t.test(
  "a body that would pass the bound is shed before it is read; it is served once the held one is answered",
  async (t) => {
    const server = await startTestServer(t, { env: { LOAD_SHED_BODY_MEMORY_MB: "1" } });
    const { token } = await createTestTenant(server.services);
    const url = new URL(server.baseUrl);
    const first = batchOf(600_000, "held");
    const second = batchOf(600_000, "refused");
    t.ok(first.length > MiB / 2 && first.length < MiB, `each body is over half the bound (${first.length} bytes)`);

    // The first body: its headers and half of it sent, the rest held back.
    let finishFirst = (): unknown => undefined;
    const answer = new Promise<{ status: number; body: string }>((resolve, reject) => {
      const request = http.request(
        {
          host: url.hostname,
          port: url.port,
          path: "/v1/intake/batch",
          method: "POST",
          headers: {
            Authorization: `Bearer ${token}`,
            "Content-Type": "application/json",
            "Content-Length": Buffer.byteLength(first),
          },
        },
        (response) => {
          let body = "";
          response.on("data", (chunk: Buffer) => (body += chunk.toString("utf8")));
          response.on("end", () => resolve({ status: response.statusCode ?? 0, body }));
        },
      );
      request.on("error", reject);
      request.write(first.slice(0, first.length / 2));
      t.teardown(() => request.destroy());
      finishFirst = () => request.end(first.slice(first.length / 2));
    });
    await waitFor(held, (bytes) => bytes === Buffer.byteLength(first), { seconds: 30 });

    const submissions = async () =>
      (
        (await (await server.request("/v1/intake/submissions?limit=100", { token })).json()) as {
          submissions: unknown[];
        }
      ).submissions.length;
    const sendSecond = () =>
      server.request("/v1/intake/batch", {
        method: "POST",
        token,
        body: second,
        headers: { "Content-Type": "application/json" },
      });
    const before = await submissions();
    const refused = await sendSecond();
    t.equal(refused.status, 503, "the second large body is refused");
    t.equal(refused.headers.get("retry-after"), "1");
    const envelope = (await refused.json()) as { error: { code: string; details: unknown } };
    t.equal(envelope.error.code, "SERVICE_UNAVAILABLE");
    t.same(envelope.error.details, { reason: "body_memory" });

    // A streamed body counts as its route's limit (1 MiB), which does not fit beside the held one either.
    const streamed = await fetch(`${server.baseUrl}/v1/intake/submit`, {
      method: "POST",
      headers: { Authorization: `Bearer ${token}`, "Content-Type": "application/json" },
      body: new Blob([JSON.stringify({ filename: "a.pdf", file_size: 1, mime_type: "application/pdf" })]).stream(),
      duplex: "half",
    } as RequestInit);
    t.equal(streamed.status, 503, "a streamed body is refused while it cannot fit at the route's limit");
    await streamed.body?.cancel();

    const small = await server.request("/v1/intake/submit", {
      method: "POST",
      token,
      json: { filename: "small.pdf", file_size: 1, mime_type: "application/pdf" },
    });
    t.equal(small.status, 201, "a small body that fits beside the held one is served");
    t.equal(await submissions(), before + 1, "the refused bodies changed nothing; the small one was stored");

    finishFirst();
    const firstAnswer = await answer;
    t.equal(firstAnswer.status, 201, `the held body is served once it has arrived (${firstAnswer.body.slice(0, 200)})`);
    await waitFor(held, (bytes) => bytes === 0, { seconds: 30 });
    const retried = await sendSecond();
    t.equal(retried.status, 201, "the refused body is served when retried");
  },
);
