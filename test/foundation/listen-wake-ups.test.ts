// The waits of listen sessions' polls: woken by their session's key, one wait per session (a second ends
// the first), all ended at once when the process shuts down, and ended by the client going away.
import t from "tap";
import { ListenWakeUps } from "../../foundation/listen-wake-ups.ts";

t.test("a wait ends when its session is woken, not when another is", async (t) => {
  const wakeUps = new ListenWakeUps();
  const mine = ListenWakeUps.key("tenant-a", "session-1");
  const waiting = wakeUps.wait(mine, 10_000);
  wakeUps.wake(ListenWakeUps.key("tenant-b", "session-1"));
  wakeUps.wake(ListenWakeUps.key("tenant-a", "session-2"));
  wakeUps.wake(mine);
  t.equal(await waiting, "woken");
});

t.test("a wait nobody wakes ends when its time is up", async (t) => {
  const wakeUps = new ListenWakeUps();
  t.equal(await wakeUps.wait("tenant session", 20), "timeout");
});

t.test("a second wait of one session ends the first one's", async (t) => {
  const wakeUps = new ListenWakeUps();
  const first = wakeUps.wait("tenant session", 10_000);
  const second = wakeUps.wait("tenant session", 10_000);
  t.equal(await first, "superseded");
  wakeUps.wake("tenant session");
  t.equal(await second, "woken", "the second one is the session's wait now");
});

t.test("closing ends every wait, and every later one at once", async (t) => {
  const wakeUps = new ListenWakeUps();
  const waits = [wakeUps.wait("a 1", 10_000), wakeUps.wait("b 2", 10_000)];
  wakeUps.close();
  t.same(await Promise.all(waits), ["closed", "closed"]);
  t.equal(await wakeUps.wait("a 1", 10_000), "closed");
  t.ok(wakeUps.closed);
});

t.test("the client going away ends its wait", async (t) => {
  const wakeUps = new ListenWakeUps();
  const gone = new AbortController();
  const waiting = wakeUps.wait("tenant session", 10_000, gone.signal);
  gone.abort();
  t.equal(await waiting, "aborted");
  t.equal(await wakeUps.wait("tenant session", 10_000, gone.signal), "aborted", "already gone: at once");
});

t.test("a wait looks again by itself after 10 s with notifications, after 1 s without", async (t) => {
  const wakeUps = new ListenWakeUps();
  t.equal(wakeUps.recheckMs, 1000);
  wakeUps.connected = true;
  t.equal(wakeUps.recheckMs, 10_000);
});
