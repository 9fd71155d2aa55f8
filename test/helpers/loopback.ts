// A request listener (an express app) served on a loopback port for one test, closed when the test ends.
import http, { type RequestListener } from "node:http";
import type { AddressInfo } from "node:net";
import type { Test } from "tap";

/** Listens on 127.0.0.1 at a free port; resolves to the base URL. */
export async function serveOnLoopback(t: Test, listener: RequestListener): Promise<string> {
  const server = http.createServer(listener);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}
