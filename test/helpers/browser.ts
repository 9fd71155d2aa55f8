// Debian's Chromium driven by playwright-core (no browser download): headless, without the background
// services whose connections this machine's closed network refuses; playwright gives it a new empty profile.
import type { Test } from "tap";
import { chromium, type Browser } from "playwright-core";

export const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";

export async function launchChromium(t: Test): Promise<Browser> {
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
    ],
  });
  t.teardown(async () => {
    await browser.close();
  });
  return browser;
}
