// The /portal page in a real headless Chromium: a teammate opens a portal link,
// adds an HTTPS endpoint (a real receiver on loopback), sends a test event, sees the delivery and its
// attempt, resends it, rotates the secret, sees a failing endpoint disabled with its reason, fixes and
// re-enables it and resends; an expired link, a tampered link and another tenant's link show nothing
// of anyone's data. Every request stays on the service's origin; screenshots go to .artifacts/portal/.
import t from "tap";
import type { Page } from "playwright-core";
import { decodeJwt } from "jose";
import { EVENT_DESCRIPTIONS, EVENT_KINDS } from "../../generated/event-kinds.ts";
import { startWebhookRig, testCa } from "../helpers/webhooks.ts";
import { createTestTenant } from "../helpers/server.ts";
import {
  BROWSER_DEADLINE_SECONDS,
  BROWSER_FILE_TIMEOUT_MS,
  browserSession,
  portalLink,
  screenshot,
  type BrowserSession,
} from "../helpers/browser.ts";
import { waitFor } from "../helpers/wait.ts";

// Every wait below is on a condition, with the generous deadline of test/helpers/browser.ts.
t.setTimeout(BROWSER_FILE_TIMEOUT_MS);
const until = { seconds: BROWSER_DEADLINE_SECONDS };

const SHOTS = "portal";
let broken = false;

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
  const browser: BrowserSession = await browserSession(t);
  const page = await browser.context.newPage();
  page.on("dialog", (dialog) => void dialog.accept());

  await page.goto(await portalLink(server, tenant));
  await page.getByText("No endpoints yet").waitFor();
  t.notOk(page.url().includes("#token="), "the credential is removed from the address bar");
  // The deliveries list loads on its own request, which may still be under way.
  await page.getByText("No deliveries yet").waitFor();
  t.pass("the empty deliveries state says what to do");
  await page.locator("#tenant-name", { hasText: "Test tenant" }).waitFor();
  t.pass("the header names the tenant (GET /v1/me)");
  await screenshot(page, SHOTS, "01-empty");

  // The session is extended before it ends: a new credential, used from then on.
  const tokenBefore = await page.evaluate(() => sessionStorage.getItem("integrator-portal-token"));
  await page.getByRole("button", { name: "Extend session" }).click();
  await page.getByText("Session extended until").waitFor();
  const tokenAfter = await page.evaluate(() => sessionStorage.getItem("integrator-portal-token"));
  t.ok(tokenAfter && tokenAfter !== tokenBefore, "the page holds a new credential");
  t.equal(decodeJwt(tokenAfter ?? "").session_iat, decodeJwt(tokenBefore ?? "").session_iat, "of the same session");
  const refreshes = await server.services.db("integrator.audit_actions").where({
    tenant_id: tenant.tenantId,
    action: "webhooks.portal_session_refreshed",
  });
  t.equal(refreshes.length, 1, "the service refreshed the session once");

  // Keyboard use starts from the top of the page.
  await page.evaluate(() => (document.activeElement as HTMLElement | null)?.blur());

  // Add an endpoint with the keyboard alone: Tab to "Add an endpoint" at the top of the endpoints (the form
  // itself is below them and the deliveries), Enter takes the focus to its URL field; type, press Enter.
  const hookUrl = receiver.url("/portal-hook");
  for (let presses = 0; presses < 10; presses++) {
    await page.keyboard.press("Tab");
    if (await page.evaluate(() => document.activeElement?.id === "go-add-endpoint")) break;
  }
  t.equal(
    await page.evaluate(() => document.activeElement?.textContent),
    "Add an endpoint",
    "Add an endpoint is reached by Tab",
  );
  await page.keyboard.press("Enter");
  t.equal(await page.evaluate(() => document.activeElement?.id), "new-url", "and takes the focus to the URL field");
  await page.keyboard.type(hookUrl);
  await page.keyboard.press("Enter");
  const secretField = page.locator("input.secret");
  await secretField.waitFor();
  const firstSecret = await secretField.inputValue();
  t.match(firstSecret, /^whsec_[A-Za-z0-9+/]{43}=$/, "the secret is shown once (32 bytes, standard base64)");
  t.ok(await page.getByRole("button", { name: "Copy" }).isVisible(), "with a copy button");
  await page.locator(`#subscription-list code:text-is("${hookUrl}")`).waitFor();
  t.equal(await page.locator("#new-url").inputValue(), "", "the form is empty again after adding");
  t.same(
    await page
      .locator("#create-form input[name=events]:checked")
      .evaluateAll((boxes) => boxes.map((box) => (box as HTMLInputElement).value)),
    ["*"],
    "with its default choice",
  );
  const created = (await (await server.request("/v1/webhooks/subscriptions", { token: tenant.token })).json()) as {
    subscriptions: { events: string[] }[];
  };
  t.same(created.subscriptions[0]?.events, ["*"], "saved as all events, nothing else");
  // "All events" and single kinds exclude each other.
  const allEvents = page.getByRole("checkbox", { name: "all events (*)" });
  const intakeOnly = page.getByRole("checkbox", { name: "intake.submitted", exact: true });
  await intakeOnly.check();
  t.notOk(await allEvents.isChecked(), "choosing one kind clears all events");
  await allEvents.check();
  t.notOk(await intakeOnly.isChecked(), "choosing all events clears the kinds");
  await page.locator(".health", { hasText: "no attempts in the last 24 hours" }).waitFor();
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
  await page.locator(".health", { hasText: "1 of 1 recent attempt delivered" }).waitFor();
  t.match(
    await page.locator(".health").innerText(),
    /^Health: healthy · 1 of 1 recent attempt delivered \(100%\) · last attempt delivered, HTTP 204, /,
    "the endpoint's health: every recent attempt delivered",
  );
  const newest = page.locator("#delivery-list li.delivery").first();
  t.match(await newest.locator("summary").textContent(), /webhook\.test/);
  await newest.locator("summary").focus();
  await page.keyboard.press("Enter");
  const attemptRow = newest.locator("table.attempts tbody tr.attempt");
  await attemptRow.first().waitFor();
  t.equal(await attemptRow.count(), 1, "one attempt");
  const cells = await attemptRow.first().locator("td").allTextContents();
  t.equal(cells[0], "1", "attempt number");
  t.equal(cells[1], "delivered", "its outcome");
  t.equal(cells[2], "204", "its HTTP status");
  t.match(cells[4], /^\d+ ms$/, "its duration");
  // What was sent and what came back, folded under the attempt.
  const exchange = newest.locator("details.exchange");
  await exchange.locator("summary").click();
  t.match(
    await exchange.locator("pre.headers").first().textContent(),
    /^webhook-id: evt_[0-9a-f-]{36}$/m,
    "the request's headers, webhook-id among them",
  );
  t.notOk((await exchange.textContent())?.includes(firstSecret), "never the secret");
  t.match(await newest.locator("pre.payload").textContent(), /"event": "webhook.test"/, "and the payload");
  t.equal(
    await newest.locator("dd.next-attempt").textContent(),
    "none: the delivery is delivered",
    "a final delivery has no next attempt",
  );
  await screenshot(page, SHOTS, "03-delivery-attempts");

  // Resend it: a new delivery of the same event, delivered too.
  await newest.getByRole("button", { name: "Resend" }).click();
  await page.getByText("Resend queued").waitFor();
  t.equal(await newestDeliveryBecomes(page, "delivered"), "delivered");
  t.match(await page.locator("#delivery-list li.delivery").first().textContent(), /redelivery/);
  const resent = page.locator("#delivery-list li.delivery").first();
  await resent.locator("summary").click();
  const shownEventId = resent.locator("dl.facts dt:text-is('Event id') + dd");
  await shownEventId.waitFor();
  const listed = (await (await server.request("/v1/webhooks/deliveries", { token: tenant.token })).json()) as {
    deliveries: { event_id: string; origin: string }[];
  };
  t.equal(
    await shownEventId.textContent(),
    listed.deliveries.find((delivery) => delivery.origin === "test")?.event_id,
    "the resend shows the event id of the delivery it resent",
  );
  await waitFor(
    async () => receiver.receivedAt("/portal-hook").length,
    (count) => count === 2,
    until,
  );
  t.equal(receiver.receivedAt("/portal-hook").length, 2, "the receiver got the resend");

  // The event catalogue: every subscribable kind with its description, and an example of one sent to the endpoint.
  t.same(
    await page
      .locator("#event-catalogue li.event-kind")
      .evaluateAll((items) =>
        items.map((item) => [item.getAttribute("data-kind"), item.querySelector("p")?.textContent]),
      ),
    EVENT_KINDS.map((kind) => [kind, EVENT_DESCRIPTIONS[kind]]),
    "every subscribable kind, described as the document describes it",
  );
  t.same(
    await page.locator("#example-target option").allTextContents(),
    [hookUrl],
    "examples go to a chosen active endpoint",
  );
  await page.getByRole("button", { name: "Send an example intake.batch_submitted event" }).click();
  await page.getByText("Example intake.batch_submitted event queued").waitFor();
  t.equal(await newestDeliveryBecomes(page, "delivered"), "delivered", "the example is delivered");
  const [, , example] = await waitFor(
    async () => receiver.receivedAt("/portal-hook"),
    (requests) => requests.length === 3,
  );
  const exampleBody = JSON.parse(example?.rawBody.toString("utf8") ?? "{}") as { event?: string; tenant_id?: string };
  t.match(exampleBody, { event: "intake.batch_submitted", tenant_id: tenant.tenantId }, "the receiver got the example");
  t.match(
    await page.locator("#delivery-list li.delivery").first().locator("summary").innerText(),
    /intake\.batch_submitted[\s\S]*test/,
    "listed as a test delivery of its kind",
  );
  await screenshot(page, SHOTS, "11-event-catalogue");

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
  await card.locator(".health", { hasText: "of 4 recent attempts" }).waitFor();
  t.match(
    await card.locator(".health").innerText(),
    /^Health: failing · 3 of 4 recent attempts delivered \(75%\) · last attempt failed, HTTP 500, /,
    "its health: the test, the resend and the example delivered; the last attempt failed (the event missed while disabled had none)",
  );
  const failed = page.locator("#delivery-list li.delivery").first();
  await failed.locator("summary").click();
  const failedAttempt = failed.locator("table.attempts tbody tr.attempt").first();
  await failedAttempt.waitFor();
  const failedCells = await failedAttempt.locator("td").allTextContents();
  t.equal(failedCells[1], "failed", "the attempt shows why: failed");
  t.equal(failedCells[2], "500", "with the HTTP status");
  t.equal(
    await failed.locator("tr.attempt-detail .failure").first().textContent(),
    "The endpoint answered 500 Internal Server Error; only a 2xx answer counts as delivered. http_status",
    "and in words, beside the failure class",
  );
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
  // The test event the broken endpoint refused, with its attempt and the answer, opened.
  const refusedDelivery = page
    .locator("#delivery-list li.delivery")
    .filter({ has: page.locator("summary .badge.bad") })
    .filter({ hasText: "webhook.test" })
    .first();
  await refusedDelivery.locator("summary").click();
  const narrowAttempt = refusedDelivery.locator("table.attempts");
  await narrowAttempt.waitFor();
  await narrowAttempt.locator("details.exchange summary").click();
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth);
  t.ok(overflow <= 360, `no horizontal scrolling at 360 px (page is ${overflow} px wide)`);
  // Every fact of the attempt (its number, outcome, HTTP status, time and duration) and the sentence saying
  // why are in view together once the attempt is, without scrolling sideways.
  await narrowAttempt.locator("tr.attempt").scrollIntoViewIfNeeded();
  const screen = page.viewportSize() ?? { width: 0, height: 0 };
  for (const [what, cell] of [
    ["attempt number", narrowAttempt.locator("tr.attempt td").nth(0)],
    ["outcome", narrowAttempt.locator("tr.attempt td").nth(1)],
    ["HTTP status", narrowAttempt.locator("tr.attempt td").nth(2)],
    ["time", narrowAttempt.locator("tr.attempt td").nth(3)],
    ["duration", narrowAttempt.locator("tr.attempt td").nth(4)],
    ["failure sentence", narrowAttempt.locator("tr.attempt-detail .failure")],
  ] as const) {
    const box = await cell.boundingBox();
    t.ok(
      box && box.x >= 0 && box.x + box.width <= screen.width && box.y >= 0 && box.y + box.height <= screen.height,
      `the ${what} is within the 360 px screen (${JSON.stringify(box)})`,
    );
    t.ok(await cell.isVisible(), `and visible: ${JSON.stringify(await cell.innerText())}`);
  }
  t.match(await narrowAttempt.locator("tr.attempt td").nth(4).innerText(), /^\d+ ms$/, "the duration reads as such");
  await screenshot(page, SHOTS, "05-narrow-360px-attempts", { fullPage: false });
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
  t.ok(server.services.config.validateResponses, "the portal talks to a service that validates every answer");
  t.same(server.errors, [], "and every answer it got matched the document");
});

t.test("shortly before the session ends the page offers to stay, and staying refreshes it", async (t) => {
  // One-minute links: the two-minute warning shows at once.
  const rig = await startWebhookRig(t, ca, { worker: false, env: { PORTAL_SESSION_TTL_MINUTES: "1" } });
  const browser = await browserSession(t);
  const page = await browser.context.newPage();
  await page.goto(await portalLink(rig.server, rig.tenant));
  const warning = page.locator("#session-warning [role=alert]");
  await warning.waitFor();
  t.match(await warning.innerText(), /Your session ends at .+\. Stay signed in to keep working\./);
  await screenshot(page, SHOTS, "12-session-ending", { fullPage: false });
  const before = await page.evaluate(() => sessionStorage.getItem("integrator-portal-token"));
  await warning.getByRole("button", { name: "Stay signed in" }).click();
  await page.getByText("Session extended until").waitFor();
  const after = await page.evaluate(() => sessionStorage.getItem("integrator-portal-token"));
  t.ok(after && after !== before, "a new credential");
  const res = await rig.server.request("/v1/webhooks/subscriptions", { token: after ?? "" });
  t.equal(res.status, 200, "which the service accepts");
  await page.reload();
  await page.getByText("No endpoints yet").waitFor();
  t.pass("a reload goes on with the refreshed credential");
  t.same(
    browser.problems.filter((problem) => !/status of 404/.test(problem)),
    [],
    "no console errors (but the browser's own favicon request)",
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

    const browser = await browserSession(t);
    const page = await browser.context.newPage();
    await page.goto(await portalLink(server, tenant));
    await page.locator("#delivery-list li.delivery").first().waitFor();
    const firstPage = await listedDeliveries(page);
    t.same(firstPage, ids(() => true).slice(0, 25), "the newest 25, newest first");
    t.match(await page.locator("#delivery-summary").textContent(), /25 shown, newest first · 50 deliveries in all/);
    // Nothing sends here: every delivery is pending, its first attempt due since it was queued.
    const pendingSummary = page.locator("#delivery-list li.delivery").first().locator("summary");
    t.match(await pendingSummary.locator(".next-attempt").textContent(), /^ · next attempt /);
    t.equal(
      await pendingSummary.locator(".next-attempt time").getAttribute("datetime"),
      all[0]?.next_attempt_at,
      "a pending delivery shows when its next attempt is due",
    );
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
    t.same(server.errors, [], "every answer the portal got matched the document");
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
  const browser = await browserSession(t);
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
  const browser = await browserSession(t);
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
