// Debian's Chromium (/usr/bin/chromium; no browser download) driven by playwright-core: headless, without
// the background services whose connections this machine's closed network refuses. A test file starts one
// Chromium and each test gets a browser context of its own (its own cookies, storage and cache, nothing
// shared with the file's other tests), as Playwright isolates tests; starting a browser per test cost more
// than the test's own pages. browserSession records every request the pages make, so a test can check none
// goes to another host.
// Browser tests wait on conditions (an element, a text, a state the page reaches), never for a fixed time,
// and every such wait has the same generous deadline, BROWSER_DEADLINE_MS: on a busy machine a page takes
// longer, and only a page that never gets there fails.
import fs from "node:fs";
import path from "node:path";
import { chromium, type Browser, type BrowserContext, type Page } from "playwright-core";
import tap, { type Test } from "tap";
import type { TestServer, TestTenant } from "./server.ts";

export const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";

export const CHROMIUM_ARGS = [
  "--no-sandbox",
  "--headless",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

/** How long any browser wait may take before the test fails: generous, for a machine busy with other work. */
export const BROWSER_DEADLINE_MS = 180_000;
/** The same deadline in seconds, for waitFor (test/helpers/wait.ts) around browser conditions. */
export const BROWSER_DEADLINE_SECONDS = BROWSER_DEADLINE_MS / 1000;
/** A browser test file may take this long in all (tap's per-file timeout, set with t.setTimeout). */
export const BROWSER_FILE_TIMEOUT_MS = 20 * 60_000;

/** Every wait of a context's pages (actions, locators, navigation) gets BROWSER_DEADLINE_MS. */
export function withBrowserDeadline<C extends BrowserContext>(context: C): C {
  context.setDefaultTimeout(BROWSER_DEADLINE_MS);
  context.setDefaultNavigationTimeout(BROWSER_DEADLINE_MS);
  return context;
}

/** Where screenshots go (gitignored); CI keeps them as artefacts. */
export const ARTIFACTS_DIR = path.resolve(import.meta.dirname, "../../.artifacts");

let chromiumOfFile: Promise<Browser> | undefined;

/** The test file's Chromium: started at its first use, closed when the file's tests are done. */
export function fileChromium(): Promise<Browser> {
  chromiumOfFile ??= chromium
    .launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS, timeout: BROWSER_DEADLINE_MS })
    .then((browser) => {
      tap.teardown(() => browser.close());
      return browser;
    });
  return chromiumOfFile;
}

export interface BrowserSession {
  context: BrowserContext;
  /** Every URL any page of this context requested, in order. */
  requests: string[];
  /** Console errors and CSP violations reported by the pages. */
  problems: string[];
}

/** A new browser context of the file's Chromium for test `t`, closed when `t` ends. */
export async function browserSession(t: Test): Promise<BrowserSession> {
  const browser = await fileChromium();
  const context = withBrowserDeadline(await browser.newContext({ viewport: { width: 1024, height: 800 } }));
  t.teardown(() => context.close());
  const requests: string[] = [];
  const problems: string[] = [];
  context.on("request", (request) => requests.push(request.url()));
  context.on("console", (message) => {
    if (message.type() === "error") problems.push(message.text());
  });
  context.on("weberror", (error) => problems.push(error.error().message));
  return { context, requests, problems };
}

/** Saves a PNG of the page under .artifacts/<folder>/<name>.png. */
export async function screenshot(
  page: Page,
  folder: string,
  name: string,
  options: { fullPage?: boolean } = {},
): Promise<string> {
  const file = path.join(ARTIFACTS_DIR, folder, `${name}.png`);
  fs.mkdirSync(path.dirname(file), { recursive: true });
  // Transitions and animations finished, as a person sees the page once it settles (a panel that slides
  // open was caught half-way).
  await page.screenshot({ path: file, fullPage: options.fullPage ?? true, animations: "disabled" });
  return file;
}

/** A portal link for `who` that opens the test server's /portal page (its path and fragment, not PUBLIC_BASE_URL). */
export async function portalLink(server: TestServer, who: TestTenant): Promise<string> {
  const res = await server.request("/v1/webhooks/portal-sessions", { method: "POST", token: who.token });
  if (res.status !== 201) throw new Error(`portal session answered ${res.status}`);
  const { url } = (await res.json()) as { url: string };
  return `${server.baseUrl}/portal${new URL(url).hash}`;
}
