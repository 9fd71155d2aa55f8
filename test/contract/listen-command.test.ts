// `npx integrator-api-contract listen --forward-to <url>` end to end, every part a real process or server:
// the service (`node app/main.ts`, API and worker) on a test database, the contract package built, packed
// and installed as an integrator installs it, its command run as a child process with a token in its
// environment, and a receiver on loopback that verifies each request with the standardwebhooks package
// exactly as an integrator calls it (`new Webhook(secret).verify(body, headers)`, the secret as the
// command printed it from the API). An intake submission through the API is forwarded, verified and
// recorded as the delivery's attempt; a receiver answering 500 is recorded as failed attempts; Ctrl-C ends
// the session.
import { execFileSync, spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { randomBytes } from "node:crypto";
import fs from "node:fs";
import http, { type IncomingHttpHeaders } from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import t, { type Test } from "tap";
import { Webhook } from "standardwebhooks";
import { createTestDatabase } from "../helpers/database.ts";
import { startMainProcess } from "../helpers/main-process.ts";
import { runAdminCli } from "../helpers/admin-cli.ts";
import { tempDir } from "../helpers/temp-dir.ts";
import { waitFor } from "../helpers/wait.ts";
import { buildContractPackage, packContractPackage } from "../../scripts/contract-package.ts";
import { freePort } from "../../scripts/throwaway-postgres.ts";
import type { components } from "../../generated/openapi.ts";

type Schemas = components["schemas"];

// Builds, packs and installs the package, and starts the service: past tap's three minutes on a busy machine.
t.setTimeout(600_000);

const work = tempDir(t, "listen-command-");

// The service, every role, on a port known before it starts (its portal links name it).
const port = await freePort();
const env: Record<string, string> = {
  NODE_ENV: "test",
  DATABASE_URL: await createTestDatabase(t),
  ENCRYPTION_KEY: randomBytes(32).toString("hex"),
  DATA_DIR: fs.mkdtempSync(path.join(work, "data-")),
  PORT: String(port),
  // A failed attempt is retried at once, once.
  WEBHOOK_RETRY_SCHEDULE: "0s",
  MAX_DELIVERY_ATTEMPTS: "2",
};
const service = await startMainProcess(t, env, { args: [] });
const baseUrl = `http://127.0.0.1:${service.port}`;

/** An operator's admin CLI against the service's database; its JSON answer. */
async function admin(args: string[]): Promise<Record<string, string>> {
  const { code, stdout } = await runAdminCli({ env }, args);
  if (code !== 0) throw new Error(`admin ${args[0]} exited ${code}: ${stdout}`);
  return JSON.parse(stdout) as Record<string, string>;
}
const tenant = await admin(["tenant:create", "--name", "Listening tenant"]);
const client = await admin(["client:create", "--tenant", tenant.id ?? "", "--roles", "client_admin"]);
const { access_token: token = "" } = await admin([
  "token:issue",
  "--tenant",
  tenant.id ?? "",
  "--subject",
  client.client_id ?? "",
]);

async function api(pathname: string, init: RequestInit & { json?: unknown } = {}): Promise<Response> {
  const { json, ...rest } = init;
  return fetch(`${baseUrl}${pathname}`, {
    ...rest,
    headers: {
      Authorization: `Bearer ${token}`,
      ...(json === undefined ? {} : { "Content-Type": "application/json" }),
    },
    ...(json === undefined ? {} : { body: JSON.stringify(json) }),
  });
}

// The contract package as an integrator gets it: built, packed, installed into an empty project.
const packageDir = path.join(work, "package");
buildContractPackage(packageDir);
const tarball = packContractPackage(work, packageDir);
const consumer = path.join(work, "consumer");
fs.mkdirSync(consumer);
fs.writeFileSync(path.join(consumer, "package.json"), JSON.stringify({ name: "consumer", private: true }));
execFileSync("npm", ["install", "--prefer-offline", "--no-audit", "--no-fund", "--ignore-scripts", tarball], {
  cwd: consumer,
  stdio: ["ignore", "pipe", "pipe"],
});
/** The command as npm installed it (node_modules/.bin, from the package's `bin`). */
const BIN = path.join(consumer, "node_modules/.bin/integrator-api-contract");
/** Node 24 first on the PATH, so that the command's `#!/usr/bin/env node` runs on it. */
const PATH = `${path.dirname(process.execPath)}:${process.env.PATH ?? ""}`;

interface Received {
  headers: IncomingHttpHeaders;
  body: string;
  verified: boolean;
}

/** A receiver on loopback that verifies every request with standardwebhooks, then answers `status`. */
async function startReceiver(
  t: Test,
  secret: () => string,
  status: number,
): Promise<{ url: string; received: Received[] }> {
  const received: Received[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      const body = Buffer.concat(chunks).toString("utf8");
      // Exactly as an integrator's receiver calls it: the raw body and the request's headers.
      let verified: boolean;
      try {
        new Webhook(secret()).verify(body, req.headers as Record<string, string>);
        verified = true;
      } catch {
        verified = false;
      }
      received.push({ headers: req.headers, body, verified });
      res.writeHead(verified ? status : 400, { "Content-Type": "text/plain", "X-Receiver": "laptop" });
      res.end(verified ? `answered ${status}` : "signature not verified");
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  t.teardown(() => {
    server.closeAllConnections();
    return new Promise<void>((resolve) => server.close(() => resolve()));
  });
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/webhooks`, received };
}

interface Listener {
  child: ChildProcessWithoutNullStreams;
  stdout: () => string;
  stderr: () => string;
  exited: Promise<number | null>;
  /** The session id and secret of the ready lines. */
  ready: () => Promise<{ sessionId: string; secret: string }>;
}

function startListener(t: Test, args: string[], credentials: Record<string, string>): Listener {
  const child = spawn(process.execPath, [BIN, "listen", ...args], {
    cwd: consumer,
    env: { PATH, HOME: work, ...credentials },
    stdio: ["pipe", "pipe", "pipe"],
  });
  let out = "";
  let err = "";
  child.stdout.on("data", (chunk: Buffer) => (out += chunk.toString("utf8")));
  child.stderr.on("data", (chunk: Buffer) => (err += chunk.toString("utf8")));
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  let gone = false;
  void exited.then(() => (gone = true));
  t.teardown(async () => {
    if (!gone) {
      child.kill("SIGTERM");
      await exited;
    }
  });
  return {
    child,
    stdout: () => out,
    stderr: () => err,
    exited,
    async ready() {
      const found = await waitFor(
        async () => {
          if (gone) throw new Error(`the command exited:\n${out}\n${err}`);
          const session = /Listen session (\S+) forwards/.exec(out)?.[1];
          const secret = /Webhook signing secret: (whsec_\S+)/.exec(out)?.[1];
          return session && secret ? { sessionId: session, secret } : undefined;
        },
        (value) => value !== undefined,
        { seconds: 30 },
      );
      if (!found) throw new Error(`the command did not get ready:\n${out}\n${err}`);
      return found;
    },
  };
}

/** One intake submission through the API: an intake.submitted event. */
async function submit(reference: string): Promise<string> {
  const res = await api("/v1/intake/submit", {
    method: "POST",
    json: { filename: "claim.pdf", file_size: 1024, mime_type: "application/pdf", external_reference: reference },
  });
  if (res.status !== 201) throw new Error(`submit answered ${res.status}: ${await res.text()}`);
  return ((await res.json()) as { id: string }).id;
}

async function sessionDeliveries(sessionId: string): Promise<Schemas["WebhookDeliveryResponse"][]> {
  const res = await api(`/v1/webhooks/deliveries?subscription_id=${sessionId}`);
  return ((await res.json()) as Schemas["WebhookDeliveryListResponse"]).deliveries;
}

async function deliveryDetail(deliveryId: string): Promise<Schemas["WebhookDeliveryDetailResponse"]> {
  const res = await api(`/v1/webhooks/deliveries/${deliveryId}`);
  return (await res.json()) as Schemas["WebhookDeliveryDetailResponse"];
}

t.test("npx finds the command, which answers --help", async (t) => {
  const help = execFileSync("npx", ["--no-install", "integrator-api-contract", "--help"], {
    cwd: consumer,
    env: { PATH, HOME: work },
    encoding: "utf8",
  });
  t.match(help, /^Usage: integrator-api-contract listen --forward-to <url>/);
});

t.test(
  "with a token, an event is forwarded to the local receiver with the exact signed bytes and headers, standardwebhooks verifies it, the command prints the event, the answer and its time, and the attempt is recorded",
  async (t) => {
    let secret = "";
    const receiver = await startReceiver(t, () => secret, 200);
    const listener = startListener(t, ["--forward-to", receiver.url], {
      INTEGRATOR_API_URL: baseUrl,
      INTEGRATOR_TOKEN: token,
    });
    const ready = await listener.ready();
    secret = ready.secret;

    const submissionId = await submit("CLM-4711");
    const arrived = await waitFor(
      async () => receiver.received.length,
      (count) => count >= 1,
      { seconds: 30 },
    );
    t.equal(arrived, 1, "the event reached the local receiver");
    const [request] = receiver.received;
    if (!request) return;
    t.ok(request.verified, "new Webhook(secret).verify(body, headers) accepts it, the secret as the API showed it");
    const envelope = JSON.parse(request.body) as { id: string; event: string; data: { submission_id: string } };
    t.match(envelope, { event: "intake.submitted", data: { submission_id: submissionId } });
    t.equal(request.headers["webhook-id"], envelope.id);

    const line = await waitFor(
      async () =>
        listener
          .stdout()
          .split("\n")
          .find((text) => text.includes(envelope.id)),
      (text) => text !== undefined,
    );
    t.match(
      line,
      new RegExp(
        `^\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d\\.\\d{3}Z  intake\\.submitted  ${envelope.id}  -> 200 OK  \\d+ ms  \\[delivery [0-9a-f-]{36}\\]$`,
      ),
      "one line: when, the event, its id, the local answer and how long it took",
    );

    const [delivery] = await waitFor(
      () => sessionDeliveries(ready.sessionId),
      (deliveries) => deliveries.length === 1 && deliveries[0]?.status === "delivered",
      { seconds: 30 },
    );
    t.match(delivery, { status: "delivered", attempts: 1, response_code: 200, event_id: envelope.id });
    const detail = await deliveryDetail(delivery?.id ?? "");
    t.match(detail.attempts, [{ number: 1, outcome: "delivered", response_code: 200 }]);
    const sent = detail.attempts[0]?.request_headers ?? {};
    for (const name of ["webhook-id", "webhook-timestamp", "webhook-signature", "x-service-review-signature"])
      t.equal(
        request.headers[name],
        Object.entries(sent).find(([key]) => key.toLowerCase() === name)?.[1],
        `${name} as the service signed and recorded it`,
      );
    t.equal(detail.attempts[0]?.response_headers?.["x-receiver"], "laptop", "the local answer's headers are kept");
    t.equal(detail.attempts[0]?.response_body, "answered 200", "and its body");

    listener.child.kill("SIGINT");
    t.equal(await listener.exited, 0, "Ctrl-C stops it cleanly");
    const poll = await api(`/v1/webhooks/listen-sessions/${ready.sessionId}/poll?wait_seconds=0`, { method: "POST" });
    t.equal(poll.status, 404, "and ends the session");
  },
);

t.test(
  "with a portal link, a receiver answering 500 is recorded as failed attempts: retried, forwarded again, then failed",
  async (t) => {
    const link = await api("/v1/webhooks/portal-sessions", { method: "POST" });
    t.equal(link.status, 201);
    const { url } = (await link.json()) as Schemas["WebhookPortalSessionResponse"];
    let secret = "";
    const receiver = await startReceiver(t, () => secret, 500);
    // No --api-url: the portal link names the service.
    const listener = startListener(t, ["--forward-to", receiver.url, "--events", "intake.submitted"], {
      INTEGRATOR_TOKEN: url,
    });
    const ready = await listener.ready();
    secret = ready.secret;
    t.match(listener.stdout(), /forwards intake\.submitted to /);

    await submit("CLM-0500");
    const [delivery] = await waitFor(
      () => sessionDeliveries(ready.sessionId),
      (deliveries) => deliveries.length === 1 && deliveries[0]?.status === "failed",
      { seconds: 30 },
    );
    t.match(delivery, { status: "failed", attempts: 2, response_code: 500, error_message: "HTTP status 500" });
    const detail = await deliveryDetail(delivery?.id ?? "");
    t.match(detail.attempts, [
      { number: 1, outcome: "failed", error_class: "http_status", response_code: 500, response_body: "answered 500" },
      { number: 2, outcome: "failed", error_class: "http_status", response_code: 500 },
    ]);
    t.equal(receiver.received.length, 2, "both attempts reached the receiver");
    t.ok(
      receiver.received.every((request) => request.verified),
      "each verified",
    );
    const lines = listener
      .stdout()
      .split("\n")
      .filter((text) => text.includes(delivery?.event_id ?? "-"));
    t.equal(lines.length, 2);
    t.match(lines[0], / {2}-> 500 Internal Server Error {2}\d+ ms/);
    t.match(lines[1], / {2}attempt 2 {2}-> 500 Internal Server Error {2}\d+ ms/);
  },
);

t.test(
  "with an API client's credentials, nothing listening at the local URL is a failed attempt of class connection_failed",
  async (t) => {
    const closed = `http://127.0.0.1:${await freePort()}/webhooks`;
    const listener = startListener(t, ["--forward-to", closed], {
      INTEGRATOR_API_URL: baseUrl,
      INTEGRATOR_CLIENT_ID: client.client_id ?? "",
      INTEGRATOR_CLIENT_SECRET: client.client_secret ?? "",
    });
    const ready = await listener.ready();
    await submit("CLM-0000");
    const [delivery] = await waitFor(
      () => sessionDeliveries(ready.sessionId),
      (deliveries) => deliveries[0]?.status === "failed",
      { seconds: 30 },
    );
    const detail = await deliveryDetail(delivery?.id ?? "");
    t.match(detail.attempts[0], { outcome: "failed", error_class: "connection_failed", response_code: null });
    t.match(listener.stdout(), /-> connection failed \(ECONNREFUSED\)/);
  },
);

t.test("without a credential, or --forward-to, it says what is missing and exits 2", async (t) => {
  const none = spawn(process.execPath, [BIN, "listen", "--forward-to", "http://127.0.0.1:9/x"], {
    env: { PATH, HOME: work },
  });
  let err = "";
  none.stderr.on("data", (chunk: Buffer) => (err += chunk.toString()));
  t.equal(await new Promise((resolve) => none.once("exit", resolve)), 2);
  t.match(err, /no credential: set INTEGRATOR_TOKEN/);
  const noTarget = spawn(process.execPath, [BIN, "listen"], { env: { PATH, HOME: work, INTEGRATOR_TOKEN: token } });
  let err2 = "";
  noTarget.stderr.on("data", (chunk: Buffer) => (err2 += chunk.toString()));
  t.equal(await new Promise((resolve) => noTarget.once("exit", resolve)), 2);
  t.match(err2, /--forward-to is required/);
});
