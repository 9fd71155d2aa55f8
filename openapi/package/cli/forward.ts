// One delivery sent to the local receiver exactly as the service signed it: a POST of the body's UTF-8
// bytes with every header handed out, unchanged (Node adds only Host and Connection). What came back is
// kept as the service keeps an endpoint's answer: the status, at most 4 KiB of headers (lowercase names, a
// repeated header's values joined with ", ") and the first 4 KiB of the body as UTF-8 text. A redirect is
// not followed. No answer within `timeoutMs` is a timeout; no answer at all, a connection failure.
import http from "node:http";
import https from "node:https";

const MAX_BODY_BYTES = 4096;
const MAX_HEADER_BYTES = 4096;
/** The service takes at most this many answer headers with an answer. */
const MAX_HEADERS = 100;

export type LocalAnswer =
  | {
      responseCode: number;
      durationMs: number;
      responseHeaders: Record<string, string>;
      responseBody: string;
      responseBodyTruncated: boolean;
    }
  | {
      errorClass: "timeout" | "connection_failed";
      durationMs: number;
      /** Why, for the person at the terminal only (e.g. ECONNREFUSED): never reported to the service. */
      reason: string;
    };

/** The answer's headers as the service keeps them: whole headers in order while they fit in 4 KiB. */
function answerHeaders(rawHeaders: string[]): Record<string, string> {
  const joined = new Map<string, string>();
  for (let index = 0; index + 1 < rawHeaders.length; index += 2) {
    const name = (rawHeaders[index] ?? "").toLowerCase();
    const value = rawHeaders[index + 1] ?? "";
    const before = joined.get(name);
    joined.set(name, before === undefined ? value : `${before}, ${value}`);
  }
  const kept: Record<string, string> = {};
  let bytes = 0;
  let count = 0;
  for (const [name, value] of joined) {
    const size = Buffer.byteLength(name) + Buffer.byteLength(value);
    if (bytes + size > MAX_HEADER_BYTES || count >= MAX_HEADERS) continue;
    bytes += size;
    count++;
    kept[name] = value;
  }
  return kept;
}

/** The first 4 KiB of a body as UTF-8 text: bytes that are not UTF-8, and NUL, as U+FFFD. */
function bodyText(bytes: Buffer, truncated: boolean): string {
  return new TextDecoder("utf-8")
    .decode(bytes.subarray(0, MAX_BODY_BYTES), { stream: truncated })
    .replaceAll("\u0000", "\uFFFD");
}

export function forward(
  target: URL,
  delivery: { body: string; headers: Record<string, string> },
  timeoutMs: number,
): Promise<LocalAnswer> {
  const started = performance.now();
  const elapsed = () => Math.round(performance.now() - started);
  const deadline = AbortSignal.timeout(timeoutMs);
  const send = target.protocol === "https:" ? https.request : http.request;
  return new Promise<LocalAnswer>((resolve) => {
    let settled = false;
    const settle = (answer: LocalAnswer) => {
      if (settled) return;
      settled = true;
      resolve(answer);
    };
    const request = send(target, { method: "POST", headers: delivery.headers, signal: deadline }, (response) => {
      const durationMs = elapsed();
      const chunks: Buffer[] = [];
      let received = 0;
      const done = (truncated: boolean) =>
        settle({
          responseCode: response.statusCode ?? 0,
          durationMs,
          responseHeaders: answerHeaders(response.rawHeaders),
          responseBody: bodyText(Buffer.concat(chunks), truncated),
          responseBodyTruncated: truncated,
        });
      response.on("data", (chunk: Buffer) => {
        if (received < MAX_BODY_BYTES) chunks.push(chunk.subarray(0, MAX_BODY_BYTES - received));
        received += chunk.length;
        if (received > MAX_BODY_BYTES) {
          done(true);
          response.destroy();
        }
      });
      response.on("end", () => done(false));
      // The status line decided; a body cut short (by the time limit too) is only truncated.
      response.on("error", () => done(true));
      response.on("close", () => done(true));
    });
    request.on("error", (error: NodeJS.ErrnoException) => {
      const timedOut = deadline.aborted;
      settle({
        errorClass: timedOut ? "timeout" : "connection_failed",
        durationMs: elapsed(),
        reason: timedOut ? `no answer within ${timeoutMs} ms` : (error.code ?? error.message),
      });
    });
    request.end(Buffer.from(delivery.body, "utf8"));
  });
}
