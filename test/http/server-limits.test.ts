// The API's HTTP server bounds how long a request may take to arrive (HTTP_REQUEST_TIMEOUT_MS,
// HTTP_HEADERS_TIMEOUT_MS), how long a new connection may stay silent (HTTP_FIRST_BYTE_TIMEOUT_MS) and how
// many connections it holds (HTTP_MAX_CONNECTIONS, HTTP_MAX_CONNECTIONS_PER_ADDRESS): a client that
// trickles its request, or opens connections and sends nothing, cannot hold them for long, nor one address
// every slot.
import net from "node:net";
import t, { type Test } from "tap";
import { startApiService } from "../helpers/service.ts";
import { waitFor } from "../helpers/wait.ts";

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

/** A connection from `localAddress` (any 127.x.y.z reaches a loopback listener) once it is established. */
function connect(port: number, localAddress = "127.0.0.1"): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ port, host: "127.0.0.1", localAddress }, () => resolve(socket));
    socket.once("error", reject);
  });
}

/** When the server closes `socket` (ms after this call), and what it sent; gives up after `giveUpMs`. */
function closing(socket: net.Socket, giveUpMs: number): Promise<{ ms: number; data: string } | "still open"> {
  const started = Date.now();
  return new Promise((resolve) => {
    let data = "";
    const giveUp = setTimeout(() => resolve("still open"), giveUpMs);
    socket.on("data", (chunk: Buffer) => (data += chunk.toString()));
    socket.on("error", () => undefined);
    socket.once("close", () => {
      clearTimeout(giveUp);
      resolve({ ms: Date.now() - started, data });
    });
  });
}

/** One GET /v1/health on `socket`: the status line, or undefined when the connection closes first. */
function health(socket: net.Socket): Promise<string | undefined> {
  return new Promise((resolve) => {
    let data = "";
    socket.on("data", (chunk: Buffer) => {
      data += chunk.toString();
      if (data.includes("\r\n")) resolve(data.split("\r\n")[0]);
    });
    socket.once("close", () => resolve(undefined));
    socket.write("GET /v1/health HTTP/1.1\r\nHost: localhost\r\n\r\n");
  });
}

t.test(
  "connections from one address beyond HTTP_MAX_CONNECTIONS_PER_ADDRESS are closed at once; other addresses are served",
  async (t) => {
    const port = await startApi(t, { HTTP_MAX_CONNECTIONS_PER_ADDRESS: "2", HTTP_FIRST_BYTE_TIMEOUT_MS: "60000" });
    const held = [await connect(port), await connect(port)];
    t.teardown(() => held.forEach((socket) => socket.destroy()));
    // The cap is counted on accept: the held ones are counted once they answer.
    t.match(await health(held[0] as net.Socket), /^HTTP\/1\.1 200/);
    t.match(await health(held[1] as net.Socket), /^HTTP\/1\.1 200/);
    const extra = await connect(port);
    const refused = await closing(extra, 10_000);
    t.not(refused, "still open", "a third connection from the same address is closed");
    if (refused !== "still open") t.equal(refused.data, "", "without an answer");
    const elsewhere = await connect(port, "127.0.0.2");
    t.teardown(() => elsewhere.destroy());
    t.match(await health(elsewhere), /^HTTP\/1\.1 200/, "another address is served");
    (held.pop() as net.Socket).destroy();
    const again = await waitFor(
      async () => {
        const socket = await connect(port);
        const status = await health(socket);
        socket.destroy();
        return status;
      },
      (status) => status !== undefined,
      { seconds: 10 },
    );
    t.match(again, /^HTTP\/1\.1 200/, "once one closes, the address may open another");
  },
);

t.test(
  "a connection that sends nothing for HTTP_FIRST_BYTE_TIMEOUT_MS is closed; one that has sent a byte is not",
  async (t) => {
    const port = await startApi(t, {
      HTTP_FIRST_BYTE_TIMEOUT_MS: "500",
      HTTP_HEADERS_TIMEOUT_MS: "4000",
      HTTP_REQUEST_TIMEOUT_MS: "8000",
    });
    const silent = await connect(port);
    const speaking = await connect(port);
    speaking.write("G");
    const [silentOutcome, speakingOutcome] = await Promise.all([closing(silent, 10_000), closing(speaking, 20_000)]);
    t.not(silentOutcome, "still open", "the silent connection is closed");
    if (silentOutcome !== "still open") t.ok(silentOutcome.ms < 3500, `within seconds (${silentOutcome.ms} ms)`);
    t.not(speakingOutcome, "still open", "the other ends at its headers timeout");
    if (speakingOutcome !== "still open" && silentOutcome !== "still open")
      t.ok(speakingOutcome.ms > silentOutcome.ms + 1000, `later: its headers timeout (${speakingOutcome.ms} ms)`);
  },
);
