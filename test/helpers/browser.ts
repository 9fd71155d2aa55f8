// Debian's Chromium (/usr/bin/chromium; no browser download) driven by playwright-core: headless, without
// the background services whose connections this machine's closed network refuses, with a fresh profile per
// launch. launchBrowser records every request the pages make, so a test can check none goes to another host.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { chromium, type Browser, type BrowserContext, type Page } from "playwright-core";
import type { Test } from "tap";

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

/** Where screenshots go (gitignored); CI keeps them as artefacts. */
export const ARTIFACTS_DIR = path.resolve(import.meta.dirname, "../../.artifacts");

/** A plain browser (playwright gives it a new empty profile). */
export async function launchChromium(t: Test): Promise<Browser> {
  const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS });
  t.teardown(async () => {
    await browser.close();
  });
  return browser;
}

export interface BrowserSession {
  context: BrowserContext;
  /** Every URL any page of this context requested, in order. */
  requests: string[];
  /** Console errors and CSP violations reported by the pages. */
  problems: string[];
}

export async function launchBrowser(t: Test): Promise<BrowserSession> {
  const userDataDir = fs.mkdtempSync(path.join(os.tmpdir(), "integrator-chromium-"));
  const context = await chromium.launchPersistentContext(userDataDir, {
    executablePath: CHROMIUM,
    headless: true,
    args: CHROMIUM_ARGS,
    viewport: { width: 1024, height: 800 },
  });
  t.teardown(async () => {
    await context.close();
    fs.rmSync(userDataDir, { recursive: true, force: true });
  });
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
  await page.screenshot({ path: file, fullPage: options.fullPage ?? true });
  return file;
}
