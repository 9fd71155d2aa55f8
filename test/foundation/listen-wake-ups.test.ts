// The watches of listen sessions' polls: woken by their session's key, also when woken before they wait
// (an offer between a poll's look and its wait), one watch per session (a new one ends the older), all
// ended at once when the process shuts down, and ended by the client going away.
import t from "tap";
import { ListenWakeUps } from "../../foundation/listen-wake-ups.ts";

t.test("a watch ends when its session is woken, not when another is", async (t) => {
  const wakeUps = new ListenWakeUps();
  const mine = ListenWakeUps.key("tenant-a", "session-1");
  const waiting = wakeUps.watch(mine).until(10_000);
  wakeUps.wake(ListenWakeUps.key("tenant-b", "session-1"));
  wakeUps.wake(ListenWakeUps.key("tenant-a", "session-2"));
  wakeUps.wake(mine);
  t.equal(await waiting, "woken");
});

t.test("a wake between the watch's start and its wait is not lost", async (t) => {
  const wakeUps = new ListenWakeUps();
  const watch = wakeUps.watch("tenant session");
  wakeUps.wake("tenant session");
  t.equal(await watch.until(10_000), "woken", "at once");
});

t.test("a watch nobody wakes ends when its time is up; a stopped one is woken no more", async (t) => {
  const wakeUps = new ListenWakeUps();
  t.equal(await wakeUps.watch("tenant session").until(20), "timeout");
  const stopped = wakeUps.watch("tenant session");
  stopped.stop();
  wakeUps.wake("tenant session");
  t.equal(await stopped.until(20), "timeout");
});

t.test("a second watch of one session ends the first one's", async (t) => {
  const wakeUps = new ListenWakeUps();
  const first = wakeUps.watch("tenant session").until(10_000);
  const second = wakeUps.watch("tenant session");
  t.equal(await first, "superseded");
  wakeUps.wake("tenant session");
  t.equal(await second.until(10_000), "woken", "the second one is the session's watch now");
});

t.test("closing ends every watch, and every later one at once", async (t) => {
  const wakeUps = new ListenWakeUps();
  const waits = [wakeUps.watch("a 1").until(10_000), wakeUps.watch("b 2").until(10_000)];
  wakeUps.close();
  t.same(await Promise.all(waits), ["closed", "closed"]);
  t.equal(await wakeUps.watch("a 1").until(10_000), "closed");
  t.ok(wakeUps.closed);
});

t.test("the client going away ends its watch", async (t) => {
  const wakeUps = new ListenWakeUps();
  const gone = new AbortController();
  const waiting = wakeUps.watch("tenant session").until(10_000, gone.signal);
  gone.abort();
  t.equal(await waiting, "aborted");
  t.equal(await wakeUps.watch("tenant session").until(10_000, gone.signal), "aborted", "already gone: at once");
});

t.test("a waiting poll looks again by itself after 10 s with notifications, after 1 s without", async (t) => {
  const wakeUps = new ListenWakeUps();
  t.equal(wakeUps.recheckMs, 1000);
  wakeUps.connected = true;
  t.equal(wakeUps.recheckMs, 10_000);
});
