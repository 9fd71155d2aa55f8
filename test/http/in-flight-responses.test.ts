// The API server's list of responses in flight (http/in-flight-responses.ts): what a shutdown drains, and
// what it costs the collector while the server answers.
import http from "node:http";
import type { AddressInfo } from "node:net";
import t from "tap";
import { InFlightResponses } from "../../http/in-flight-responses.ts";
import { promotedShare } from "../helpers/promotion.ts";
import { serviceModule } from "../helpers/repository-copy.ts";

t.test("a response is listed from its start until it closes, finished or cut off", async (t) => {
  const inFlight = new InFlightResponses();
  const waiting: http.ServerResponse[] = [];
  let arrived: () => void = () => undefined;
  const server = http.createServer((req, res) => {
    inFlight.track(res);
    res.setHeader("X-Request", req.url ?? "");
    waiting.push(res);
    arrived();
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  t.teardown(() => {
    server.closeAllConnections();
    return new Promise<void>((resolve) => server.close(() => resolve()));
  });
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const closed = (res: http.ServerResponse) => new Promise((resolve) => res.once("close", resolve));

  const aborted = new AbortController();
  const requests = ["/1", "/2", "/3"].map((url) => {
    const signal = url === "/2" ? aborted.signal : undefined;
    return fetch(base + url, { signal }).then(
      (response) => response.text(),
      (error: unknown) => error,
    );
  });
  await new Promise<void>((resolve) => {
    arrived = () => waiting.length === 3 && resolve();
  });
  t.equal(inFlight.size, 3, "three requests waiting");
  t.same(
    inFlight
      .list()
      .map((res) => res.getHeader("X-Request"))
      .sort(),
    ["/1", "/2", "/3"],
  );

  const byUrl = (url: string) => waiting.find((res) => res.getHeader("X-Request") === url)!;
  const first = byUrl("/1");
  first.end("done");
  await closed(first);
  t.equal(inFlight.size, 2, "a finished response leaves");
  aborted.abort();
  await closed(byUrl("/2"));
  t.same(
    inFlight.list().map((res) => res.getHeader("X-Request")),
    ["/3"],
    "a response whose client went away leaves too",
  );
  byUrl("/3").end("done");
  await closed(byUrl("/3"));
  t.equal(inFlight.size, 0);
  t.same(inFlight.list(), []);
  await Promise.all(requests);
});

/**
 * The share of the young generation's bytes promoted while each request is answered after 1 ms, holding 100
 * small records meanwhile (as a request holds what it read while it waits on its database), and is tracked
 * by `tracker`.
 */
function promotedWith(tracker: "InFlightResponses" | "Set"): Promise<number> {
  return promotedShare({
    handler: `
      const { InFlightResponses } = await import(${serviceModule("http/in-flight-responses.ts")});
      const set = new Set();
      const tracker = ${JSON.stringify(tracker)} === "Set"
        ? { track(res) { set.add(res); res.once("close", () => set.delete(res)); } }
        : new InFlightResponses();
      const handle = (req, res) => {
        tracker.track(res);
        res.locals = Array.from({ length: 100 }, (_, i) => ({ i, text: "record " + i }));
        setTimeout(() => res.end("ok"), 1);
      };
    `,
  });
}

t.test("responses in flight are not kept past their end, so a young-generation collection frees them", async (t) => {
  const withSet = await promotedWith("Set");
  t.ok(
    withSet > 0.1,
    `tracked in a Set, ${(100 * withSet).toFixed(1)} % of the bytes were promoted (so this can fail)`,
  );
  const withList = await promotedWith("InFlightResponses");
  t.ok(withList < 0.02, `tracked by InFlightResponses, ${(100 * withList).toFixed(1)} % were promoted`);
});
