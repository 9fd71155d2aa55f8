// The endpoint card's health in a real headless Chromium, against a real worker and an HTTPS receiver on
// loopback: the card shows the API's figure over the endpoint's recent attempts, so an endpoint whose
// receiver starts answering 503 reads "failing" in red at once, beside the same numbers the API answers,
// while its delivery is still pending a retry (where a figure over finished deliveries read 100 %).
import t from "tap";
import type { Page } from "playwright-core";
import { startWebhookRig, testCa } from "../helpers/webhooks.ts";
import {
  BROWSER_DEADLINE_SECONDS,
  BROWSER_FILE_TIMEOUT_MS,
  browserSession,
  portalLink,
  screenshot,
} from "../helpers/browser.ts";
import { waitFor } from "../helpers/wait.ts";
import type { SubscriptionView } from "../../db/webhooks/views.ts";

t.setTimeout(BROWSER_FILE_TIMEOUT_MS);
const until = { seconds: BROWSER_DEADLINE_SECONDS };
const SHOTS = "portal";
const ca = testCa(t);

/** Paths whose receiver answers 503 Service Unavailable. */
const down = new Set<string>();

/** The card's health line once it shows `text` (Refresh reads the endpoints' health again). */
async function healthShows(page: Page, subscriptionId: string, text: string): Promise<string> {
  const line = page.locator(`[data-health-for="${subscriptionId}"]`);
  return waitFor(
    async () => {
      await page.click("#refresh-deliveries");
      await page.locator("#delivery-list .state.loading").waitFor({ state: "detached" });
      return line.innerText();
    },
    (shown) => shown.includes(text),
    { ...until, intervalMs: 300 },
  );
}

t.test("a receiver answering 503 turns the endpoint's card to failing, as the API says", async (t) => {
  const rig = await startWebhookRig(t, ca, {
    // The failed delivery waits an hour for its retry: still pending, as after a receiver's first 503.
    env: { MAX_DELIVERY_ATTEMPTS: "3", WEBHOOK_RETRY_SCHEDULE: "1h" },
    answer: (request) => (down.has(request.path) ? { status: 503 } : { status: 204 }),
  });
  const path = "/health-hook";
  const { id } = await rig.subscribe(rig.receiver.url(path));
  await rig.emitIntake();
  await waitFor(
    () => rig.subscription(id),
    (subscription) => subscription.health.attempts === 1,
  );

  const browser = await browserSession(t);
  const page = await browser.context.newPage();
  await page.goto(await portalLink(rig.server, rig.tenant));
  const line = page.locator(`[data-health-for="${id}"]`);
  await line.getByText("1 of 1 recent attempt delivered").waitFor();
  t.match(
    await line.innerText(),
    /^Health: healthy · 1 of 1 recent attempt delivered \(100%\) · last attempt delivered, HTTP 204, \S/,
    "delivered: healthy",
  );
  t.equal(await line.locator(".badge.ok").innerText(), "healthy", "in green");

  down.add(path);
  await rig.emitIntake();
  const api = await waitFor(
    () => rig.subscription(id),
    (subscription: SubscriptionView) => subscription.health.attempts === 2,
  );
  t.match(api.health, { status: "failing", attempts: 2, delivered: 1, delivered_percent: 50, last_response_code: 503 });
  const shown = await healthShows(page, id, "failing");
  t.match(
    shown,
    /^Health: failing · 1 of 2 recent attempts delivered \(50%\) · last attempt failed, HTTP 503, \S/,
    "the card says failing, with the API's numbers and the 503",
  );
  t.equal(await line.locator(".badge.bad").innerText(), "failing", "in red");
  t.equal(
    await page.locator("#delivery-list li.delivery").first().locator("summary .badge").first().innerText(),
    "pending",
    "while the failed delivery still waits for its retry",
  );
  t.equal(rig.receiver.receivedAt(path).length, 2, "both attempts reached the receiver");
  await screenshot(page, SHOTS, "13-endpoint-failing");
});

t.test(
  "an endpoint subscribed to the reports beside all events is told, in the deliveries list, of another endpoint disabled and the delivery it failed",
  async (t) => {
    const rig = await startWebhookRig(t, ca, {
      env: { MAX_DELIVERY_ATTEMPTS: "1", WEBHOOK_DISABLE_AFTER_FAILED_DELIVERIES: "1" },
      answer: (request) => (down.has(request.path) ? { status: 503 } : { status: 204 }),
    });
    const failingPath = "/reports-failing";
    down.add(failingPath);
    const failing = await rig.subscribe(rig.receiver.url(failingPath), ["intake.submitted"]);

    const browser = await browserSession(t);
    const page = await browser.context.newPage();
    await page.goto(await portalLink(rig.server, rig.tenant));
    await page.locator(`[data-health-for="${failing.id}"]`).waitFor();

    // The watcher, added in the form: all events, and both reports beside them.
    const watcherUrl = rig.receiver.url("/reports-watcher");
    await page.fill("#new-url", watcherUrl);
    for (const kind of ["webhook.endpoint_disabled", "webhook.delivery_exhausted"])
      await page.getByRole("checkbox", { name: kind, exact: true }).check();
    t.ok(await page.getByRole("checkbox", { name: "all events (*)" }).isChecked(), "all events stays chosen");
    await page.getByRole("button", { name: "Add endpoint" }).click();
    await page.locator(`#subscription-list code:text-is("${watcherUrl}")`).waitFor();
    const watcher = (await rig.subscriptions()).find((subscription) => subscription.url === watcherUrl);
    t.same(watcher?.events, ["*", "webhook.endpoint_disabled", "webhook.delivery_exhausted"], "saved as chosen");

    await rig.emitIntake();
    await waitFor(
      async () => rig.receiver.receivedAt("/reports-watcher").length,
      (count) => count === 3,
      until,
    );
    const reports = page.locator("#delivery-list li.delivery span.report");
    await waitFor(
      async () => {
        await page.click("#refresh-deliveries");
        await page.locator("#delivery-list .state.loading").waitFor({ state: "detached" });
        return reports.count();
      },
      (count) => count === 2,
      { ...until, intervalMs: 300 },
    );
    const summaries = await page
      .locator("#delivery-list li.delivery", { has: page.locator("span.report") })
      .locator("summary")
      .allInnerTexts();
    const failingUrl = rig.receiver.url(failingPath);
    t.ok(
      summaries.some((text) =>
        text.includes(`webhook.endpoint_disabled · ${failingUrl} was disabled: 1 deliveries in a row failed`),
      ),
      "the disabled endpoint, by its URL, and why",
    );
    t.ok(
      summaries.some((text) =>
        text.includes(
          `webhook.delivery_exhausted · intake.submitted to ${failingUrl} failed its one attempt (last: HTTP 503)`,
        ),
      ),
      "the delivery it failed, and the answer",
    );
    t.ok(
      summaries.every((text) => text.includes(watcherUrl)),
      "both delivered to the watcher, none to the endpoint they are about",
    );
    await page.reload();
    const card = page.locator(`li.subscription[data-subscription-id="${failing.id}"]`);
    await card.locator(".reason").waitFor();
    t.match(await card.locator(".health").innerText(), /^Health: failing · 0 of 1 recent attempt delivered \(0%\)/);
    await screenshot(page, SHOTS, "14-endpoint-reports");
  },
);
