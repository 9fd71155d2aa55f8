// The /portal page in a real headless Chromium (issue 15 point 3): a teammate opens a portal link,
// adds an HTTPS endpoint (a real receiver on loopback), sends a test event, sees the delivery and its
// attempt, resends it, rotates the secret, sees a failing endpoint disabled with its reason, fixes and
// re-enables it and resends; an expired link, a tampered link and another tenant's link show nothing
// of anyone's data. Every request stays on the service's origin; screenshots go to .artifacts/portal/.
import t from "tap";
import type { Page } from "playwright-core";
import { decodeJwt } from "jose";
import { startWebhookRig, testCa } from "../helpers/webhooks.ts";
import { createTestTenant, type TestServer, type TestTenant } from "../helpers/server.ts";
import {
  BROWSER_DEADLINE_SECONDS,
  BROWSER_FILE_TIMEOUT_MS,
  launchBrowser,
  screenshot,
  type BrowserSession,
} from "../helpers/browser.ts";
import { waitFor } from "../helpers/wait.ts";

// Every wait below is on a condition, with the generous deadline of test/helpers/browser.ts.
t.setTimeout(BROWSER_FILE_TIMEOUT_MS);
const until = { seconds: BROWSER_DEADLINE_SECONDS };

const SHOTS = "portal";
let broken = false;

async function portalLink(server: TestServer, who: TestTenant): Promise<string> {
  const res = await server.request("/v1/webhooks/portal-sessions", { method: "POST", token: who.token });
  if (res.status !== 201) throw new Error(`portal session answered ${res.status}`);
  const { url } = (await res.json()) as { url: string };
  // PUBLIC_BASE_URL is not the test server's address; keep the link's path and fragment.
  return `${server.baseUrl}/portal${new URL(url).hash}`;
}

/** Clicks Refresh until the newest delivery shown has the wanted status. */
async function newestDeliveryBecomes(page: Page, status: string): Promise<string> {
  const read = async () => {
    await page.click("#refresh-deliveries");
    // The click puts the list in its loading state; it has loaded when that state is gone.
    await page.locator("#delivery-list .state.loading").waitFor({ state: "detached" });
    const badge = page.locator("#delivery-list li.delivery").first().locator("summary .badge").first();
    return (await badge.count()) === 0 ? "" : ((await badge.textContent()) ?? "");
  };
  return waitFor(read, (text) => text === status, { ...until, intervalMs: 300 });
}

const ca = testCa(t);

t.test("a teammate with only a portal link finds, fixes and resends a webhook delivery", async (t) => {
  const rig = await startWebhookRig(t, ca, {
    env: { MAX_DELIVERY_ATTEMPTS: "1", WEBHOOK_DISABLE_AFTER_FAILED_DELIVERIES: "1" },
    answer: () => (broken ? { status: 500 } : { status: 204 }),
  });
  const { server, receiver, tenant } = rig;
  const browser: BrowserSession = await launchBrowser(t);
  const page = await browser.context.newPage();
  page.on("dialog", (dialog) => void dialog.accept());

  await page.goto(await portalLink(server, tenant));
  await page.getByText("No endpoints yet").waitFor();
  t.notOk(page.url().includes("#token="), "the credential is removed from the address bar");
  t.ok(await page.getByText("No deliveries yet").isVisible(), "the empty deliveries state says what to do");
  await screenshot(page, SHOTS, "01-empty");

  // Add an endpoint with the keyboard alone: focus the URL field by tabbing, type, press Enter.
  const hookUrl = receiver.url("/portal-hook");
  for (let presses = 0; presses < 10; presses++) {
    await page.keyboard.press("Tab");
    if (await page.evaluate(() => document.activeElement?.id === "new-url")) break;
  }
  t.equal(await page.evaluate(() => document.activeElement?.id), "new-url", "the URL field is reached by Tab");
  await page.keyboard.type(hookUrl);
  await page.keyboard.press("Enter");
  const secretField = page.locator("input.secret");
  await secretField.waitFor();
  const firstSecret = await secretField.inputValue();
  t.match(firstSecret, /^whsec_[\w-]{43}$/, "the secret is shown once");
  t.ok(await page.getByRole("button", { name: "Copy" }).isVisible(), "with a copy button");
  await page.locator(`#subscription-list code:text-is("${hookUrl}")`).waitFor();
  await screenshot(page, SHOTS, "02-endpoint-created");

  // Copy really puts the secret on the clipboard (the page may use it once the origin is granted it).
  await browser.context.grantPermissions(["clipboard-read", "clipboard-write"], {
    origin: new URL(server.baseUrl).origin,
  });
  await page.evaluate(() => navigator.clipboard.writeText("something else"));
  await page.getByRole("button", { name: "Copy" }).click();
  await page.getByRole("button", { name: "Copied" }).waitFor();
  t.equal(
    await page.evaluate(() => navigator.clipboard.readText()),
    firstSecret,
    "Copy puts the secret on the clipboard",
  );

  // A test event: the delivery and its attempt appear.
  await page.getByRole("button", { name: "Send test event" }).click();
  await page.getByText("Test event queued").waitFor();
  t.equal(await newestDeliveryBecomes(page, "delivered"), "delivered", "the test delivery is delivered");
  t.equal(receiver.receivedAt("/portal-hook").length, 1, "the receiver got it");
  const newest = page.locator("#delivery-list li.delivery").first();
  t.match(await newest.locator("summary").textContent(), /webhook\.test/);
  await newest.locator("summary").focus();
  await page.keyboard.press("Enter");
  const attemptRow = newest.locator("table.attempts tbody tr");
  await attemptRow.first().waitFor();
  t.equal(await attemptRow.count(), 1, "one attempt");
  const cells = await attemptRow.first().locator("td").allTextContents();
  t.equal(cells[0], "1", "attempt number");
  t.match(cells[2], /^\d+ ms$/, "its duration");
  t.equal(cells[3], "delivered", "its outcome");
  t.equal(cells[4], "204", "its HTTP status");
  t.match(await newest.locator("pre.payload").textContent(), /"event": "webhook.test"/, "and the payload");
  await screenshot(page, SHOTS, "03-delivery-attempts");

  // Resend it: a new delivery of the same event, delivered too.
  await newest.getByRole("button", { name: "Resend" }).click();
  await page.getByText("Resend queued").waitFor();
  t.equal(await newestDeliveryBecomes(page, "delivered"), "delivered");
  t.match(await page.locator("#delivery-list li.delivery").first().textContent(), /redelivery/);
  await waitFor(
    async () => receiver.receivedAt("/portal-hook").length,
    (count) => count === 2,
    until,
  );
  t.equal(receiver.receivedAt("/portal-hook").length, 2, "the receiver got the resend");

  // Rotate the secret: a new one, shown once.
  await page.getByRole("button", { name: "Rotate secret" }).click();
  await page.getByText("Secret rotated.").waitFor();
  const secondSecret = await page.locator("input.secret").inputValue();
  t.match(secondSecret, /^whsec_/);
  t.not(secondSecret, firstSecret, "the rotated secret is new");
  t.ok(await page.getByText("The previous secret also signs deliveries until").isVisible(), "the overlap is shown");

  // Disable it by hand, with the keyboard: Disable opens a confirmation; Escape closes it, changing nothing.
  const endpoint = page.locator("li.subscription").first();
  await endpoint.getByRole("button", { name: "Disable", exact: true }).click();
  t.equal(
    await page.evaluate(() => document.activeElement?.getAttribute("name")),
    "reason",
    "the reason has the focus",
  );
  await page.keyboard.press("Escape");
  t.equal(await endpoint.locator("form.confirm").count(), 0, "Escape closes the confirmation");
  t.equal(await page.evaluate(() => document.activeElement?.textContent), "Disable", "and gives the focus back");
  t.equal(await page.locator("li.subscription.disabled").count(), 0, "nothing was disabled");
  await page.keyboard.press("Enter");
  await endpoint.getByLabel("Reason (optional").waitFor();
  await page.keyboard.type("Moving the receiver");
  await page.keyboard.press("Enter");
  await page.getByText("Endpoint disabled").waitFor();
  const byHand = page.locator("li.subscription.disabled");
  await byHand.waitFor();
  t.match(
    await byHand.locator(".reason").textContent(),
    /^Disabled by hand .+: Moving the receiver\. Nothing is sent to it\./,
    "the disabled endpoint stands out with its reason",
  );
  t.equal(await byHand.getByRole("button", { name: "Send test event" }).count(), 0, "no test event while disabled");
  t.equal(await page.evaluate(() => document.activeElement?.textContent), "Re-enable", "the focus moves to Re-enable");
  const shownByApi = (await (
    await server.request(`/v1/webhooks/subscriptions/${await byHand.getAttribute("data-subscription-id")}`, {
      token: tenant.token,
    })
  ).json()) as { status: string; disabled_reason: string };
  t.match(shownByApi, { status: "disabled", disabled_reason: "Disabled by hand: Moving the receiver" });
  // An event meanwhile is recorded, failed without an attempt, and never sent.
  const sentBefore = receiver.receivedAt("/portal-hook").length;
  await rig.emitIntake();
  t.equal(await newestDeliveryBecomes(page, "failed"), "failed", "an event while disabled ends failed");
  const unsent = page.locator("#delivery-list li.delivery").first();
  await unsent.locator("summary").click();
  await unsent.locator(".not-sent").waitFor();
  t.match(
    await unsent.locator(".not-sent").textContent(),
    /No attempt was made: Subscription disabled by hand/,
    "its detail says it was not sent, and why",
  );
  await screenshot(page, SHOTS, "07-disabled-by-hand");
  t.equal(receiver.receivedAt("/portal-hook").length, sentBefore, "nothing reached the receiver");
  await byHand.getByRole("button", { name: "Re-enable" }).focus();
  await page.keyboard.press("Enter");
  await page.getByText("Endpoint re-enabled").waitFor();
  t.equal(await page.locator("li.subscription.disabled").count(), 0, "re-enabled, it is active again");
  t.equal(await page.evaluate(() => document.activeElement?.textContent), "Disable", "the focus moves to Disable");

  // The endpoint breaks: the failed delivery disables it, which stands out with its reason.
  broken = true;
  await page.getByRole("button", { name: "Send test event" }).click();
  t.equal(await newestDeliveryBecomes(page, "failed"), "failed", "the delivery failed");
  await waitFor(
    async () => {
      await page.reload();
      return page.locator("li.subscription.disabled").count();
    },
    (count) => count === 1,
    { ...until, intervalMs: 500 },
  );
  const card = page.locator("li.subscription.disabled");
  t.equal(await card.count(), 1, "the disabled endpoint stands out");
  t.match(await card.locator(".reason").textContent(), /Disabled .+: .+/, "with its reason");
  const failed = page.locator("#delivery-list li.delivery").first();
  await failed.locator("summary").click();
  const failedAttempt = failed.locator("table.attempts tbody tr").first();
  await failedAttempt.waitFor();
  const failedCells = await failedAttempt.locator("td").allTextContents();
  t.equal(failedCells[3], "failed", "the attempt shows why: failed");
  t.equal(failedCells[4], "500", "with the HTTP status");
  t.equal(failedCells[5], "http_status", "and the failure class");
  await screenshot(page, SHOTS, "04-endpoint-disabled");

  // Filters: only failed deliveries.
  await page.selectOption("#filter-status", "failed");
  await page.getByRole("button", { name: "Apply" }).click();
  await page.getByText("(filtered)").waitFor();
  const statuses = await page.locator("#delivery-list li.delivery summary .badge.bad").count();
  t.equal(await page.locator("#delivery-list li.delivery").count(), statuses, "only failed deliveries are listed");
  t.equal(statuses, 2, "the one missed while disabled by hand and the one that failed");
  await page.getByRole("button", { name: "Clear" }).click();

  // Fix the endpoint, re-enable it, resend the failed delivery, and see it succeed.
  broken = false;
  await card.getByRole("button", { name: "Re-enable" }).click();
  await page.getByText("Endpoint re-enabled").waitFor();
  t.equal(await page.locator("li.subscription.disabled").count(), 0, "the endpoint is active again");
  const toResend = page.locator("#delivery-list li.delivery").first();
  await toResend.locator("summary").click();
  await toResend.getByRole("button", { name: "Resend" }).click();
  t.equal(await newestDeliveryBecomes(page, "delivered"), "delivered", "the resend succeeds");

  // Readable at 360 px: nothing wider than the screen.
  await page.setViewportSize({ width: 360, height: 740 });
  await page.reload();
  await page.locator("#subscription-list").waitFor();
  await page.locator("#delivery-list li.delivery").first().locator("summary").click();
  await page.locator("table.attempts").first().waitFor();
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth);
  t.ok(overflow <= 360, `no horizontal scrolling at 360 px (page is ${overflow} px wide)`);
  await screenshot(page, SHOTS, "05-narrow-360px");
  await page.locator("li.subscription").first().getByRole("button", { name: "Disable", exact: true }).click();
  await page.locator("form.confirm").waitFor();
  const withConfirmation = await page.evaluate(() => document.documentElement.scrollWidth);
  t.ok(withConfirmation <= 360, `the disable confirmation fits 360 px too (page is ${withConfirmation} px wide)`);
  await screenshot(page, SHOTS, "09-disable-confirmation-360px", { fullPage: false });
  await page.keyboard.press("Escape");

  const origin = new URL(server.baseUrl).origin;
  const elsewhere = browser.requests.filter((url) => new URL(url).origin !== origin);
  t.same(elsewhere, [], "no request to any other host");
  t.same(
    browser.problems.filter((problem) => /Content Security Policy|Refused/i.test(problem)),
    [],
    "no CSP violation",
  );
});

/** The delivery ids the page lists, in order. */
async function listedDeliveries(page: Page): Promise<string[]> {
  return page
    .locator("#delivery-list li.delivery")
    .evaluateAll((items) => items.map((item) => item.getAttribute("data-delivery-id") ?? ""));
}

/** Applies the filter form and waits for the list it asked for. */
async function applyFilters(page: Page, fill: () => Promise<void>): Promise<string[]> {
  await page.getByRole("button", { name: "Clear" }).click();
  await page.getByText("(filtered)").waitFor({ state: "detached" });
  await fill();
  await page.getByRole("button", { name: "Apply" }).click();
  await page.getByText("(filtered)").waitFor();
  return listedDeliveries(page);
}

t.test(
  "deliveries: Load older pages past the newest 25 without duplicates, and every filter narrows the list",
  async (t) => {
    const rig = await startWebhookRig(t, ca, { worker: false });
    const { server, tenant } = rig;
    const everything = await rig.subscribe(rig.receiver.url("/everything"));
    const intakeOnly = await rig.subscribe(rig.receiver.url("/intake-only"), ["intake.submitted"]);
    for (let event = 0; event < 14; event++) await rig.emitIntake();
    // A boundary between two batches, to the second (the page's time filters are to the second).
    const boundary = Math.floor(Date.now() / 1000) * 1000 + 1000;
    await waitFor(
      async () => Date.now(),
      (now) => now > boundary + 50,
      { ...until, intervalMs: 50 },
    );
    for (let event = 0; event < 10; event++) await rig.emitIntake();
    for (let test = 0; test < 2; test++) {
      const res = await server.request(`/v1/webhooks/subscriptions/${everything.id}/test`, {
        method: "POST",
        token: tenant.token,
      });
      t.equal(res.status, 202, "a test event");
    }
    const all = await rig.deliveries();
    t.equal(all.length, 50, "14 and 10 events to two endpoints, and two test events");
    const ids = (keep: (delivery: (typeof all)[number]) => boolean) => all.filter(keep).map((delivery) => delivery.id);

    const browser = await launchBrowser(t);
    const page = await browser.context.newPage();
    await page.goto(await portalLink(server, tenant));
    await page.locator("#delivery-list li.delivery").first().waitFor();
    const firstPage = await listedDeliveries(page);
    t.same(firstPage, ids(() => true).slice(0, 25), "the newest 25, newest first");
    t.match(await page.locator("#delivery-summary").textContent(), /25 shown, newest first · 50 deliveries in all/);
    const older = page.getByRole("button", { name: "Load older deliveries" });
    await older.focus();
    await page.keyboard.press("Enter");
    await waitFor(
      () => listedDeliveries(page),
      (listed) => listed.length >= 50,
      until,
    );
    const bothPages = await listedDeliveries(page);
    t.same(
      bothPages,
      ids(() => true),
      "then the 25 older ones, in order",
    );
    t.equal(new Set(bothPages).size, bothPages.length, "no delivery is listed twice");
    t.equal(await older.count(), 0, "no more to load: the control is gone");
    await screenshot(page, SHOTS, "08-deliveries-paged");

    const bySubscription = await applyFilters(page, () =>
      page.selectOption("#filter-subscription_id", intakeOnly.id).then(() => undefined),
    );
    t.same(
      bySubscription,
      ids((delivery) => delivery.subscription_id === intakeOnly.id),
      "by endpoint",
    );
    t.equal(bySubscription.length, 24);

    const byKind = await applyFilters(page, () =>
      page.selectOption("#filter-event_type", "webhook.test").then(() => undefined),
    );
    t.same(
      byKind,
      ids((delivery) => delivery.event_type === "webhook.test"),
      "by event kind",
    );
    t.equal(byKind.length, 2);

    const byStatus = await applyFilters(page, () =>
      page.selectOption("#filter-status", "delivered").then(() => undefined),
    );
    t.same(byStatus, [], "by status: nothing was delivered (no worker runs here)");
    t.ok(await page.getByText("No delivery matches these filters").isVisible(), "the empty state says to clear them");

    // The browser's local time of the boundary, as a datetime-local value to the second.
    const local = await page.evaluate((instant) => {
      const date = new Date(instant);
      const pad = (value: number) => String(value).padStart(2, "0");
      return `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())}T${pad(date.getHours())}:${pad(date.getMinutes())}:${pad(date.getSeconds())}`;
    }, boundary);
    const after = await applyFilters(page, () => page.fill("#filter-created_after", local));
    t.same(
      after,
      ids((delivery) => Date.parse(delivery.created_at) > boundary),
      "created after the boundary",
    );
    t.equal(after.length, 22, "the second batch and the test events");

    const before = await applyFilters(page, () => page.fill("#filter-created_before", local));
    t.same(before.length, 25, "created before the boundary: a first page of 25");
    await older.click();
    await waitFor(
      () => listedDeliveries(page),
      (listed) => listed.length >= 28,
      until,
    );
    t.same(
      await listedDeliveries(page),
      ids((delivery) => Date.parse(delivery.created_at) < boundary),
      "and the older ones of the first batch, filtered still",
    );

    const combined = await applyFilters(page, async () => {
      await page.selectOption("#filter-subscription_id", everything.id);
      await page.fill("#filter-created_after", local);
    });
    t.same(
      combined,
      ids((delivery) => delivery.subscription_id === everything.id && Date.parse(delivery.created_at) > boundary),
      "filters combine",
    );
    t.equal(combined.length, 12);

    await page.getByRole("button", { name: "Clear" }).click();
    await page.getByText("(filtered)").waitFor({ state: "detached" });
    await waitFor(
      () => listedDeliveries(page),
      (listed) => listed.length === 25,
      until,
    );
    t.same(await listedDeliveries(page), ids(() => true).slice(0, 25), "Clear shows the newest 25 again");
  },
);

t.test("an expired link, a tampered link and another tenant's link show nothing of anyone's data", async (t) => {
  const rig = await startWebhookRig(t, ca, { worker: false });
  const { server, tenant } = rig;
  const secretUrl = "https://hooks.example.com/tenant-a-secret-endpoint";
  await rig.subscribe(secretUrl);
  await rig.emitIntake();
  const [deliveryA] = await rig.deliveries();
  const other = await createTestTenant(server.services, ["client_admin"], "Other tenant");
  const browser = await launchBrowser(t);
  const forbiddenText = [secretUrl, tenant.tenantId, deliveryA?.id ?? "no-delivery", "order-4711"];
  const shows = async (page: Page) => {
    const text = (await page.locator("body").innerText()) + (await page.content());
    return forbiddenText.filter((fragment) => text.includes(fragment));
  };

  const expired = await server.services.tokens.issuePortal({
    subject: tenant.subject,
    tenantId: tenant.tenantId,
    creatorTenantId: tenant.tenantId,
    expiresInSeconds: -120,
  });
  const expiredPage = await browser.context.newPage();
  await expiredPage.goto(`${server.baseUrl}/portal#token=${expired.token}`);
  await expiredPage.getByRole("heading", { name: "This portal link has expired" }).waitFor();
  t.same(await shows(expiredPage), [], "expired: nothing of tenant A");
  await screenshot(expiredPage, SHOTS, "06-expired-link");

  const valid = new URL(await portalLink(server, tenant)).hash.replace(/^#token=/, "");
  const [header, , signature] = valid.split(".");
  const forged = Buffer.from(JSON.stringify({ ...decodeJwt(valid), tenant_id: other.tenantId })).toString("base64url");
  const tamperedPage = await browser.context.newPage();
  await tamperedPage.goto(`${server.baseUrl}/portal#token=${header}.${forged}.${signature}`);
  await tamperedPage.getByRole("heading", { name: "This portal link has expired or is not valid" }).waitFor();
  t.same(await shows(tamperedPage), [], "tampered: nothing of tenant A");
  t.equal(await tamperedPage.locator("#subscription-list, #delivery-list li.delivery").count(), 0, "nor of B");

  const otherPage = await browser.context.newPage();
  await otherPage.goto(await portalLink(server, other));
  await otherPage.getByText("No endpoints yet").waitFor();
  await otherPage.getByText("No deliveries yet").waitFor();
  t.same(await shows(otherPage), [], "another tenant's link: nothing of tenant A");

  const noLink = await browser.context.newPage();
  await noLink.goto(`${server.baseUrl}/portal`);
  await noLink.getByText("No portal link").waitFor();
  t.pass("without a link the page says how to get one");
});

t.test("when the service refuses a request the page says what happened and what to do", async (t) => {
  // A real refusal from the real service: the principal's rate limit, a handful of requests a minute.
  const rig = await startWebhookRig(t, ca, { worker: false, env: { RATE_LIMIT_PER_MINUTE: "4" } });
  const browser = await launchBrowser(t);
  const page = await browser.context.newPage();
  await page.goto(await portalLink(rig.server, rig.tenant));
  await page.getByText("No endpoints yet").waitFor();
  const alert = page.locator("#delivery-list [role=alert]");
  for (let clicks = 0; clicks < 8 && (await alert.count()) === 0; clicks++) {
    await page.click("#refresh-deliveries");
    await page.locator("#delivery-list .state:not(.loading)").first().waitFor();
  }
  await alert.waitFor();
  t.match(await alert.innerText(), /Too many requests just now\. Wait a minute and try again\./);
  t.ok(await alert.getByRole("button").first().isVisible(), "with a button to try again");
  await screenshot(page, SHOTS, "10-error-state");
});
