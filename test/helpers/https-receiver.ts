// A real HTTPS webhook receiver on loopback, with a test CA made at run time by the openssl CLI.
// Used by the webhook tests and by scripts/bench/webhooks.ts (so it does not depend on tap).
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import https from "node:https";
import type { IncomingHttpHeaders, ServerResponse } from "node:http";
import os from "node:os";
import path from "node:path";

/** The host name deliveries use; WEBHOOK_RESOLVE maps it to 127.0.0.1. */
export const RECEIVER_HOST = "hooks.test.example";

export interface TestCa {
  dir: string;
  caFile: string;
  key: string;
  cert: string;
  remove(): void;
}

/** A throwaway CA and a server certificate for RECEIVER_HOST signed by it, in a new temp directory. */
export function makeTestCa(): TestCa {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "integrator-ca-"));
  const file = (name: string) => path.join(dir, name);
  const openssl = (...args: string[]) =>
    execFileSync("openssl", args, { cwd: dir, stdio: ["ignore", "ignore", "pipe"] });
  const ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"];
  openssl(
    "req",
    "-x509",
    ...ec,
    "-keyout",
    "ca.key",
    "-out",
    "ca.pem",
    "-days",
    "2",
    "-subj",
    "/CN=Integrator test CA",
    "-addext",
    "basicConstraints=critical,CA:TRUE",
    "-addext",
    "keyUsage=critical,keyCertSign,cRLSign",
  );
  openssl("req", ...ec, "-keyout", "server.key", "-out", "server.csr", "-subj", `/CN=${RECEIVER_HOST}`);
  fs.writeFileSync(
    file("server.ext"),
    `subjectAltName=DNS:${RECEIVER_HOST}\nextendedKeyUsage=serverAuth\nbasicConstraints=CA:FALSE\n`,
  );
  openssl(
    "x509",
    "-req",
    "-in",
    "server.csr",
    "-CA",
    "ca.pem",
    "-CAkey",
    "ca.key",
    "-CAcreateserial",
    "-out",
    "server.pem",
    "-days",
    "2",
    "-extfile",
    "server.ext",
  );
  return {
    dir,
    caFile: file("ca.pem"),
    key: fs.readFileSync(file("server.key"), "utf8"),
    cert: fs.readFileSync(file("server.pem"), "utf8"),
    remove: () => fs.rmSync(dir, { recursive: true, force: true }),
  };
}

export interface ReceivedRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  /** The body exactly as received. */
  rawBody: Buffer;
  receivedAt: number;
}

/**
 * What the receiver does with a request: answer with a status (and headers and a body), maybe after a
 * delay, or never answer; `bodyNeverEnds` sends the status, headers and body and then holds the answer open.
 * `raw` writes its bytes to the connection as the whole answer (status line, headers and body, which Node's
 * own server would refuse to send, such as a control character in a header) and closes it.
 */
export type Answer =
  | {
      status: number;
      headers?: Record<string, string>;
      body?: string | Buffer;
      bodyNeverEnds?: boolean;
      delayMs?: number;
    }
  | { raw: string | Buffer }
  | "stall";

export interface Receiver {
  port: number;
  /** https://hooks.test.example:<port><pathname> */
  url(pathname: string): string;
  received: ReceivedRequest[];
  /** Requests received for one path, in order. */
  receivedAt(pathname: string): ReceivedRequest[];
  /** Requests received whose answer has not ended yet (delayed, stalled or still being written). */
  inFlight(): number;
  /** Calls `listener` on every TCP connection, before TLS and HTTP. */
  onConnection(listener: () => void): void;
  close(): Promise<void>;
}

export async function startReceiver(
  ca: Pick<TestCa, "key" | "cert">,
  answer: (request: ReceivedRequest, countForPath: number) => Answer = () => ({ status: 204 }),
  options: {
    onRequest?: (request: ReceivedRequest) => void;
    keepRecords?: boolean;
    /** How long an idle connection stays open (announced in Keep-Alive; 1 s by default, too short for clients to reuse). */
    keepAliveTimeoutMs?: number;
  } = {},
): Promise<Receiver> {
  const received: ReceivedRequest[] = [];
  const counts = new Map<string, number>();
  const stalled = new Set<ServerResponse>();
  let inFlight = 0;
  const server = https.createServer({ key: ca.key, cert: ca.cert }, (req, res) => {
    inFlight++;
    res.once("close", () => inFlight--);
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      const request: ReceivedRequest = {
        method: req.method ?? "",
        path: req.url ?? "",
        headers: req.headers,
        rawBody: Buffer.concat(chunks),
        receivedAt: performance.now(),
      };
      if (options.keepRecords !== false) received.push(request);
      options.onRequest?.(request);
      const count = (counts.get(request.path) ?? 0) + 1;
      counts.set(request.path, count);
      const reply = answer(request, count);
      if (reply === "stall") {
        stalled.add(res);
        return;
      }
      if ("raw" in reply) {
        req.socket.end(reply.raw);
        return;
      }
      const send = () => {
        if (res.destroyed) return;
        res.writeHead(reply.status, reply.headers);
        if (reply.bodyNeverEnds) {
          stalled.add(res);
          res.write(reply.body ?? "");
          return;
        }
        res.end(reply.body);
      };
      if (reply.delayMs) {
        stalled.add(res);
        setTimeout(() => {
          stalled.delete(res);
          send();
        }, reply.delayMs);
      } else send();
    });
  });
  server.keepAliveTimeout = options.keepAliveTimeoutMs ?? 1000;
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  const port = typeof address === "object" && address ? address.port : 0;
  return {
    port,
    url: (pathname) => `https://${RECEIVER_HOST}:${port}${pathname}`,
    received,
    receivedAt: (pathname) => received.filter((request) => request.path === pathname),
    inFlight: () => inFlight,
    onConnection: (listener) => {
      server.on("connection", listener);
    },
    async close() {
      for (const res of stalled) res.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
