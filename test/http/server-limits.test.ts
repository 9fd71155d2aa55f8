// The API's HTTP server bounds how long a request may take to arrive (HTTP_REQUEST_TIMEOUT_MS,
// HTTP_HEADERS_TIMEOUT_MS) and how many connections it holds (HTTP_MAX_CONNECTIONS): a client that
// trickles its request cannot hold a connection for Node's default 300 s.
import net from "node:net";
import t, { type Test } from "tap";
import { startApiService } from "../helpers/service.ts";

async function startApi(t: Test, env: Record<string, string>): Promise<number> {
  return (await startApiService(t, { LOAD_SHED_DB_PENDING_ACQUIRES: "0", ...env })).port;
}

interface Outcome {
  closedAfterMs: number;
  received: string;
}

/** Opens a socket, sends `head`, then one byte of `trickle` every `everyMs` until the server closes it. */
function trickle(port: number, head: string, drip: string, everyMs: number, giveUpMs: number): Promise<Outcome> {
  return new Promise((resolve, reject) => {
    const started = Date.now();
    const socket = net.connect(port, "127.0.0.1");
    let received = "";
    let timer: NodeJS.Timeout | undefined;
    const giveUp = setTimeout(() => {
      clearInterval(timer);
      socket.destroy();
      reject(new Error(`the server still held the connection after ${giveUpMs} ms`));
    }, giveUpMs);
    socket.on("data", (chunk: Buffer) => (received += chunk.toString("latin1")));
    socket.on("error", () => undefined);
    socket.once("close", () => {
      clearInterval(timer);
      clearTimeout(giveUp);
      resolve({ closedAfterMs: Date.now() - started, received });
    });
    socket.once("connect", () => {
      socket.write(head);
      let index = 0;
      timer = setInterval(() => {
        if (socket.destroyed) return;
        socket.write(drip[index % drip.length] as string);
        index += 1;
      }, everyMs);
    });
  });
}

t.test("a request body trickled past HTTP_REQUEST_TIMEOUT_MS is answered 408 and the connection closed", async (t) => {
  const port = await startApi(t, { HTTP_REQUEST_TIMEOUT_MS: "2000", HTTP_HEADERS_TIMEOUT_MS: "1000" });
  const head =
    "POST /token HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 100000\r\n\r\n";
  const outcome = await trickle(port, head, "a", 100, 15_000);
  t.match(outcome.received, /^HTTP\/1\.1 408 /, "Node answers 408 Request Timeout");
  t.ok(outcome.closedAfterMs >= 1500, `not before the timeout (${outcome.closedAfterMs} ms)`);
  t.ok(outcome.closedAfterMs < 6000, `closed within a few seconds of it (${outcome.closedAfterMs} ms)`);
});

t.test("headers trickled past HTTP_HEADERS_TIMEOUT_MS close the connection", async (t) => {
  const port = await startApi(t, { HTTP_REQUEST_TIMEOUT_MS: "5000", HTTP_HEADERS_TIMEOUT_MS: "1000" });
  const outcome = await trickle(port, "GET /v1/health HTTP/1.1\r\nHost: localhost\r\n", "X-Slow: a\r\n", 100, 15_000);
  t.ok(outcome.closedAfterMs < 4500, `closed within a few seconds (${outcome.closedAfterMs} ms)`);
  t.notMatch(outcome.received, /^HTTP\/1\.1 200/, "the request was never served");
});

t.test("connections beyond HTTP_MAX_CONNECTIONS are closed at once; the held ones still work", async (t) => {
  const port = await startApi(t, { HTTP_MAX_CONNECTIONS: "2" });
  const open = () =>
    new Promise<net.Socket>((resolve, reject) => {
      const socket = net.connect(port, "127.0.0.1", () => resolve(socket));
      socket.once("error", reject);
    });
  const held = [await open(), await open()];
  t.teardown(() => held.forEach((socket) => socket.destroy()));
  // Give the server the two accepts before the third (the cap is counted on accept).
  const extra = net.connect(port, "127.0.0.1");
  extra.on("error", () => undefined);
  const closed = await new Promise<{ ms: number; data: string }>((resolve) => {
    const started = Date.now();
    let data = "";
    extra.on("data", (chunk: Buffer) => (data += chunk.toString()));
    extra.once("connect", () => extra.write("GET /v1/health HTTP/1.1\r\nHost: localhost\r\n\r\n"));
    extra.once("close", () => resolve({ ms: Date.now() - started, data }));
  });
  t.equal(closed.data, "", "the third connection got no answer");
  t.ok(closed.ms < 3000, `and was closed at once (${closed.ms} ms)`);
  const answer = await new Promise<string>((resolve) => {
    const socket = held[0] as net.Socket;
    let data = "";
    socket.on("data", (chunk: Buffer) => {
      data += chunk.toString();
      if (data.includes("\r\n\r\n")) resolve(data);
    });
    socket.write("GET /v1/health HTTP/1.1\r\nHost: localhost\r\n\r\n");
  });
  t.match(answer, /^HTTP\/1\.1 200 /, "a held connection is served");
});
