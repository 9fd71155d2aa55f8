// The API's HTTP server: Node's server with the connection policy (timeouts, connection caps, the
// first-byte rule) and the drain a shutdown runs (app/lifecycle.ts starts and stops it).
import http, { type IncomingMessage, type RequestListener, type Server, type ServerResponse } from "node:http";
import type net from "node:net";
import type { Config } from "../foundation/config.ts";
import { TimeoutError, withTimeout } from "../foundation/timeouts.ts";
import { InFlightResponses } from "./in-flight-responses.ts";
import { addressKey } from "./rate-limit.ts";

/**
 * The API's HTTP server, counting in-flight responses so that a shutdown can drain them. Draining keeps the
 * listener open for a window first (readiness already answers 503, every response closes its connection),
 * so that clients and load balancers move away before connections are refused: closing idle keep-alive
 * connections at once resets the requests clients were just sending on them. A request must arrive whole
 * within HTTP_REQUEST_TIMEOUT_MS (its headers within HTTP_HEADERS_TIMEOUT_MS), else Node answers 408 and
 * closes the connection: a slow body cannot hold a connection for Node's default 300 s. Connections beyond
 * HTTP_MAX_CONNECTIONS, or beyond HTTP_MAX_CONNECTIONS_PER_ADDRESS from one peer address, are closed as
 * they arrive, and a connection that sends nothing within HTTP_FIRST_BYTE_TIMEOUT_MS is closed, so one
 * address cannot hold every slot with silent connections.
 */
export function createApiServer(app: RequestListener, limits: Config["http"]) {
  const inFlight = new InFlightResponses();
  let draining = false;
  const server = http.createServer({
    requestTimeout: limits.requestTimeoutMs,
    headersTimeout: limits.headersTimeoutMs,
    // Node checks those timeouts on this interval (30 s by default, coarser than the timeouts themselves).
    connectionsCheckingInterval: Math.min(1000, limits.headersTimeoutMs),
  });
  server.maxConnections = limits.maxConnections;
  limitConnectionsPerAddress(server, limits);
  // Registered before the app: every response is tracked from its start.
  server.on("request", (_req: IncomingMessage, res: ServerResponse) => {
    inFlight.track(res);
    // A keep-alive connection is closed after its current response once draining starts.
    if (draining) res.setHeader("Connection", "close");
  });
  server.on("request", app);
  server.keepAliveTimeout = 65_000;

  return {
    server,
    /**
     * Answers on for `windowMs` (each response closing its connection), then stops accepting, lets in-flight
     * requests finish within `timeoutMs`, and cuts the rest off. Returns how many were cut off.
     */
    async drain(timeoutMs: number, windowMs = 0): Promise<number> {
      draining = true;
      for (const res of inFlight.list()) if (!res.headersSent) res.setHeader("Connection", "close");
      if (windowMs > 0) await new Promise((resolve) => setTimeout(resolve, windowMs));
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeIdleConnections();
      try {
        await withTimeout(closed, timeoutMs, "draining the API");
        return 0;
      } catch (error) {
        if (!(error instanceof TimeoutError)) throw error;
      }
      const cutOff = inFlight.size;
      server.closeAllConnections();
      await closed;
      return cutOff;
    },
  };
}

/** The per-address cap and the first-byte timeout, on every accepted connection (docs/operating.md). */
function limitConnectionsPerAddress(server: Server, limits: Config["http"]): void {
  const open = new Map<string, number>();
  server.on("connection", (socket: net.Socket) => {
    // The peer of the TCP connection: TRUST_PROXY names clients per request, not per connection.
    const address = addressKey(socket.remoteAddress);
    const count = (open.get(address) ?? 0) + 1;
    if (count > limits.maxConnectionsPerAddress) {
      socket.destroy();
      return;
    }
    open.set(address, count);
    socket.once("close", () => {
      const left = (open.get(address) ?? 1) - 1;
      if (left > 0) open.set(address, left);
      else open.delete(address);
    });
    // bytesRead counts what the HTTP parser consumed too, without a listener that would change how it reads.
    const silent = setTimeout(() => {
      if (socket.bytesRead === 0) socket.destroy();
    }, limits.firstByteTimeoutMs);
    silent.unref();
    socket.once("close", () => clearTimeout(silent));
  });
}
