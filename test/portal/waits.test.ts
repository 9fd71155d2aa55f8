// The browser tests wait on conditions, not clocks: on a machine busy with other work a page takes longer,
// and a fixed sleep or a short timeout then fails a test whose page would have got there. Their files hold
// no sleep and no timeout of their own; every wait takes the one generous deadline of test/helpers/browser.ts,
// which sets it on every browser context and launch.
import fs from "node:fs";
import path from "node:path";
import t from "tap";

const ROOT = path.resolve(import.meta.dirname, "../..");
const read = (file: string) => fs.readFileSync(path.join(ROOT, file), "utf8");
const BROWSER_TESTS = [
  "test/portal/browser.test.ts",
  "test/portal/edit-endpoint.test.ts",
  "test/contract/reference-page.test.ts",
];

/** What waits on the clock: sleeps, and timeouts or deadlines written as numbers in place. */
const CLOCK_WAITS: [string, RegExp][] = [
  ["waitForTimeout (a sleep)", /\.waitForTimeout\(/],
  ["a sleep with setTimeout", /new Promise[^;]*setTimeout/],
  ["a timeout written as a number", /\btimeout:\s*[\d_]+/],
  ["a deadline written as a number", /\bseconds:\s*[\d_]+/],
  ["a deadline counted by hand", /Date\.now\(\)\s*\+\s*[\d_]+/],
];

for (const file of BROWSER_TESTS) {
  t.test(`${file} waits on conditions with the shared deadline`, async (t) => {
    const text = read(file);
    for (const [what, pattern] of CLOCK_WAITS) t.notMatch(text, pattern, `no ${what}`);
    t.match(text, /t\.setTimeout\(BROWSER_FILE_TIMEOUT_MS\)/, "the file's own timeout is the shared one");
  });
}

t.test("test/helpers/browser.ts gives the launch and every context the shared deadline", async (t) => {
  const text = read("test/helpers/browser.ts");
  t.match(text, /setDefaultTimeout\(BROWSER_DEADLINE_MS\)/);
  t.match(text, /setDefaultNavigationTimeout\(BROWSER_DEADLINE_MS\)/);
  t.equal((text.match(/\.launch\(/g) ?? []).length, 1, "one launch");
  t.equal((text.match(/timeout: BROWSER_DEADLINE_MS/g) ?? []).length, 1, "and it has the deadline");
  t.equal(
    (text.match(/\.newContext\(/g) ?? []).length,
    (text.match(/withBrowserDeadline\(await [a-z]+\.newContext\(/g) ?? []).length,
    "every context it makes",
  );
  for (const [what, pattern] of CLOCK_WAITS.slice(0, 2)) t.notMatch(text, pattern, `no ${what}`);
});
