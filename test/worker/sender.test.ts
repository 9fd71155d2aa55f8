// worker/sender.ts against a real HTTPS receiver on loopback: the worker's long-lived abort signal is
// lent to every attempt and must come back clean, whatever the attempt's outcome; an answer's headers are
// kept up to their own limit; and an answer Node's parser refuses for a control character in a header
// still counts by its status line.
import { getEventListeners } from "node:events";
import fs from "node:fs";
import tls from "node:tls";
import t from "tap";
import {
  FAILURE,
  HEADERS_LEFT_OUT,
  MAX_RESPONSE_HEADER_BYTES,
  sendWebhook,
  type SendSettings,
} from "../../worker/sender.ts";
import { RECEIVER_HOST, startReceiver, type Answer } from "../helpers/https-receiver.ts";
import { testCa } from "../helpers/webhooks.ts";

const ca = testCa(t);

function settings(timeoutMs: number): SendSettings {
  return {
    timeoutMs,
    allowPrivateTargets: true,
    allowedPorts: [[1, 65535]],
    resolve: { [RECEIVER_HOST]: "127.0.0.1" },
    secureContext: tls.createSecureContext({ ca: [...tls.rootCertificates, fs.readFileSync(ca.caFile, "utf8")] }),
  };
}

t.test(
  "the sender leaves no listener on the worker's abort signal after an attempt (delivered, failed or timed out)",
  async (t) => {
    const receiver = await startReceiver(ca, (request) =>
      request.path.startsWith("/stall")
        ? "stall"
        : request.path.startsWith("/fail")
          ? { status: 500 }
          : { status: 204 },
    );
    t.teardown(() => receiver.close());
    const shutdown = new AbortController();
    const request = (path: string) => ({ url: receiver.url(path), body: "{}", headers: {} });
    for (let i = 0; i < 50; i++) {
      const outcome = await sendWebhook(request(`/ok-${i}`), settings(5000), shutdown.signal);
      if (!outcome.delivered) t.fail(`attempt ${i} failed: ${outcome.detail}`);
    }
    t.equal(getEventListeners(shutdown.signal, "abort").length, 0, "none after 50 delivered attempts");
    for (let i = 0; i < 10; i++) await sendWebhook(request(`/fail-${i}`), settings(5000), shutdown.signal);
    t.equal(getEventListeners(shutdown.signal, "abort").length, 0, "none after 10 failed attempts");
    const timedOut = await sendWebhook(request("/stall"), settings(300), shutdown.signal);
    t.match(timedOut, { delivered: false, errorClass: "timeout", errorMessage: "Timeout" });
    t.equal(getEventListeners(shutdown.signal, "abort").length, 0, "none after a timed-out attempt");
    const refused = await sendWebhook(
      { url: `https://${RECEIVER_HOST}:1/x`, body: "{}", headers: {} },
      settings(2000),
      shutdown.signal,
    );
    t.match(refused, { delivered: false, errorClass: "connection_failed", errorMessage: "Connection failed" });
    t.equal(getEventListeners(shutdown.signal, "abort").length, 0, "none after a refused connection");
  },
);

t.test("the worker's abort signal still cuts an attempt in flight short", async (t) => {
  const receiver = await startReceiver(ca, () => "stall");
  t.teardown(() => receiver.close());
  const shutdown = new AbortController();
  const attempt = sendWebhook(
    { url: receiver.url("/stall"), body: "{}", headers: {} },
    settings(10_000),
    shutdown.signal,
  );
  await new Promise<void>((resolve) => {
    const check = () => (receiver.received.length > 0 ? resolve() : setTimeout(check, 20));
    check();
  });
  t.equal(getEventListeners(shutdown.signal, "abort").length, 1, "one listener while the attempt runs");
  const started = performance.now();
  shutdown.abort();
  t.match(await attempt, {
    delivered: false,
    errorClass: "connection_failed",
    errorMessage: "Interrupted: the worker stopped",
  });
  t.ok(performance.now() - started < 2000, "ended at once, not at the timeout");
  const after = await sendWebhook(
    { url: receiver.url("/late"), body: "{}", headers: {} },
    settings(5000),
    shutdown.signal,
  );
  t.match(
    after,
    { delivered: false, errorMessage: "Interrupted: the worker stopped" },
    "an attempt after shutdown does not start",
  );
});

t.test(
  "an answer's headers are kept up to 4 KiB, whole headers in order, and the rest marked as left out",
  async (t) => {
    // 14.5 KB of headers from one answer (Node's parser refuses more than 16 KiB).
    const many = Object.fromEntries(
      Array.from({ length: 24 }, (_, index) => [`x-filler-${String(index).padStart(2, "0")}`, "v".repeat(500)]),
    );
    const receiver = await startReceiver(ca, (request): Answer =>
      request.path === "/huge"
        ? { status: 200, headers: { "X-First": "kept", ...many, "X-Huge": "h".repeat(2500) } }
        : { status: 200, headers: { "X-Small": "kept" } },
    );
    t.teardown(() => receiver.close());
    const outcome = await sendWebhook({ url: receiver.url("/huge"), body: "{}", headers: {} }, settings(5000));
    t.match(outcome, { delivered: true, responseCode: 200 });
    const headers = outcome.response?.headers ?? {};
    const kept = Object.entries(headers).filter(([name]) => name !== HEADERS_LEFT_OUT);
    const bytes = kept.reduce((sum, [name, value]) => sum + Buffer.byteLength(name) + Buffer.byteLength(value), 0);
    t.ok(
      bytes <= MAX_RESPONSE_HEADER_BYTES,
      `the headers kept hold ${bytes} bytes, at most ${MAX_RESPONSE_HEADER_BYTES}`,
    );
    t.equal(headers["x-first"], "kept", "the first headers are kept whole");
    t.notOk("x-huge" in headers, "a header that does not fit is left out, not cut");
    t.type(headers.date, "string", "a later header that fits is still kept");
    const keptFillers = kept.filter(([name]) => name.startsWith("x-filler-")).length;
    t.ok(keptFillers > 0 && keptFillers < 24, `some fillers kept (${keptFillers}), in the order received`);
    t.same(
      kept.filter(([name]) => name.startsWith("x-filler-")).map(([name]) => name),
      Object.keys(many).slice(0, keptFillers),
    );
    t.match(headers[HEADERS_LEFT_OUT], new RegExp(`^${25 - keptFillers} headers not kept`), "the marker counts them");

    const small = await sendWebhook({ url: receiver.url("/small"), body: "{}", headers: {} }, settings(5000));
    t.notOk(HEADERS_LEFT_OUT in (small.response?.headers ?? {}), "no marker when everything fits");
  },
);

t.test(
  "an answer with a control character in a header counts by its status line, the character shown escaped",
  async (t) => {
    const answers: Record<string, string> = {
      "/ok": "HTTP/1.1 200 OK\r\nX-Trace: a\u0001b\u001b[31m\r\nContent-Length: 2\r\n\r\nok",
      "/nul": "HTTP/1.1 202 Accepted\r\nX-Note: nul\u0000here\r\nContent-Length: 0\r\n\r\n",
      "/continue": "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\nX-Del: \u007f\r\n\r\n",
      "/refused": "HTTP/1.1 503 Service Unavailable\r\nRetry-After: 5\u000b\r\nContent-Length: 0\r\n\r\n",
      "/not-http": "SSH-2.0-OpenSSH_9.6\r\n\r\n",
      "/bad-name": "HTTP/1.1 200 OK\r\nX Bad\u0001: v\r\nContent-Length: 0\r\n\r\n",
      "/cut": "HTTP/1.1 200 OK\r\nX-Trace: a\u0001b\r\n",
      "/bare-cr": "HTTP/1.1 200 OK\r\nX-Trace: a\rb\r\nContent-Length: 0\r\n\r\n",
      "/framing": "HTTP/1.1 200 OK\r\nX-Trace: a\u0001b\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nok",
      "/two-lengths": "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\nok",
    };
    const receiver = await startReceiver(ca, (request) => ({
      raw: Buffer.from(answers[request.path] ?? "", "latin1"),
    }));
    t.teardown(() => receiver.close());
    const send = (path: string) => sendWebhook({ url: receiver.url(path), body: "{}", headers: {} }, settings(5000));

    const ok = await send("/ok");
    t.match(ok, { delivered: true, responseCode: 200 }, "a 200 is delivered");
    t.same(
      ok.response,
      {
        status: 200,
        headers: { "x-trace": "a\\u0001b\\u001B[31m", "content-length": "2" },
        body: "",
        bodyTruncated: true,
      },
      "its headers with each control character as \\u00XX; its body not read",
    );
    t.match(await send("/nul"), {
      delivered: true,
      responseCode: 202,
      response: { headers: { "x-note": "nul\\u0000here" } },
    });
    t.match(
      await send("/continue"),
      { delivered: true, responseCode: 204, response: { headers: { "x-del": "\\u007F" } } },
      "an interim 100 is passed over",
    );
    t.match(
      await send("/refused"),
      { delivered: false, responseCode: 503, errorClass: "http_status", errorMessage: "HTTP status 503" },
      "a refusal stays a refusal, by its status",
    );
    t.match(
      await send("/bare-cr"),
      { delivered: true, responseCode: 200, response: { headers: { "x-trace": "a\\u000Db" } } },
      "a CR without its LF in a value is a control character like the others",
    );
    for (const path of ["/not-http", "/bad-name", "/cut", "/two-lengths", "/framing"])
      t.match(
        await send(path),
        {
          delivered: false,
          responseCode: null,
          errorClass: FAILURE.invalidResponse.errorClass,
          errorMessage: FAILURE.invalidResponse.message,
          errorSentence: FAILURE.invalidResponse.sentence,
          response: null,
        },
        `${path}: what cannot be read as HTTP says so`,
      );
  },
);
