// The /portal page says things where a person is looking, in a real headless Chromium at 1280 and 360 px
// wide: what exists (the endpoints, then their deliveries) comes above the form that adds one; a refused
// edit or addition is said inside its form, beside the field concerned, without pydantic's "Value error, ",
// with the field focused and marked; the message is inside the viewport (its box on screen, its text
// visible), not somewhere above it. The endpoints are many, so that the page is much taller than the screen.
import t, { type Test } from "tap";
import type { Locator, Page } from "playwright-core";
import { createTestTenant, startTestServer, type TestServer, type TestTenant } from "../helpers/server.ts";
import { BROWSER_FILE_TIMEOUT_MS, browserSession, portalLink, screenshot } from "../helpers/browser.ts";

// Every wait below is on a condition, with the generous deadline of test/helpers/browser.ts.
t.setTimeout(BROWSER_FILE_TIMEOUT_MS);

const SHOTS = "portal";
const ENDPOINTS = 8;
const WIDTHS = [
  { width: 1280, height: 800 },
  { width: 360, height: 740 },
];

/** Whether the element's box lies wholly inside the viewport and it is visible, with its box for the message. */
async function inViewport(page: Page, element: Locator): Promise<{ inside: boolean; box: unknown }> {
  const screen = page.viewportSize() ?? { width: 0, height: 0 };
  const box = await element.boundingBox();
  const inside =
    box !== null &&
    (await element.isVisible()) &&
    box.width > 0 &&
    box.height > 0 &&
    box.x >= 0 &&
    box.y >= 0 &&
    box.x + box.width <= screen.width &&
    box.y + box.height <= screen.height;
  return { inside, box };
}

/** Asserts the element is wholly on screen and visible, naming what it is. */
async function assertInView(t: Test, page: Page, element: Locator, what: string): Promise<void> {
  const { inside, box } = await inViewport(page, element);
  t.ok(inside, `${what} is inside the viewport (${JSON.stringify(box)})`);
}

// One service for the file: each test has a tenant of its own, which sees nothing of the others' endpoints.
const serverOfFile = startTestServer(t);

async function tenantWithEndpoints(t: Test): Promise<{ server: TestServer; tenant: TestTenant }> {
  const server = await serverOfFile;
  const tenant = await createTestTenant(server.services);
  for (let n = 1; n <= ENDPOINTS; n++) {
    const res = await server.request("/v1/webhooks/subscriptions", {
      method: "POST",
      token: tenant.token,
      json: { url: `https://hooks.example.com/endpoint-${n}`, events: ["*"], description: `Endpoint number ${n}` },
    });
    t.equal(res.status, 201, `endpoint ${n}`);
  }
  return { server, tenant };
}

async function openPortal(t: Test, server: TestServer, tenant: TestTenant, viewport: (typeof WIDTHS)[number]) {
  const browser = await browserSession(t);
  const page = await browser.context.newPage();
  await page.setViewportSize(viewport);
  await page.goto(await portalLink(server, tenant));
  await page
    .locator("li.subscription")
    .nth(ENDPOINTS - 1)
    .waitFor();
  await page.locator("#delivery-list .state.empty").waitFor();
  return page;
}

for (const viewport of WIDTHS) {
  const px = `${viewport.width}px`;

  t.test(`${px}: the endpoints and the deliveries come before the form that adds one`, async (t) => {
    const { server, tenant } = await tenantWithEndpoints(t);
    const page = await openPortal(t, server, tenant, viewport);
    const top = async (selector: string) => (await page.locator(selector).boundingBox())?.y ?? Number.NaN;
    const endpoints = await top("#subscription-list");
    const deliveries = await top("#deliveries-title");
    const form = await top("#create-form");
    t.ok(endpoints < deliveries, `the endpoints (${endpoints}) above the deliveries (${deliveries})`);
    t.ok(deliveries < form, `the deliveries above the add form (${form})`);
    await assertInView(t, page, page.locator("li.subscription").first().locator(".url"), "the first endpoint");

    // "Add an endpoint" at the top takes the focus to the form's URL field and brings it into view.
    await page.getByRole("button", { name: "Add an endpoint" }).click();
    t.equal(await page.evaluate(() => document.activeElement?.id), "new-url", "the URL field has the focus");
    await assertInView(t, page, page.locator("#new-url"), "the URL field");
  });

  t.test(`${px}: a refused edit is said in its form, beside the field, focused and in view`, async (t) => {
    const { server, tenant } = await tenantWithEndpoints(t);
    const page = await openPortal(t, server, tenant, viewport);
    const card = page.locator("li.subscription").nth(ENDPOINTS - 1);
    const savedUrl = await card.locator(".url").innerText();
    await card.getByRole("button", { name: "Edit" }).click();
    const form = card.getByRole("form", { name: `Edit the endpoint ${savedUrl}` });
    const url = form.getByLabel("Endpoint URL (https)");
    await url.fill(savedUrl.replace(/^https:/, "http:"));
    await form.getByRole("button", { name: "Save changes" }).click();

    const message = form.locator(".field-error");
    await message.waitFor();
    t.equal(await message.innerText(), "URL scheme must be https", "the service's rule, without 'Value error, '");
    await assertInView(t, page, message, "the message");
    await assertInView(t, page, url, "the field it concerns");
    t.equal(await page.evaluate(() => document.activeElement?.id), await url.getAttribute("id"), "which has the focus");
    t.equal(await url.getAttribute("aria-invalid"), "true", "marked invalid");
    t.equal(await url.getAttribute("aria-describedby"), await message.getAttribute("id"), "and described by it");
    t.equal(await page.locator("#notice").innerText(), "", "nothing is said at the top of the page instead");
    t.notMatch(await page.locator("body").innerText(), /Value error/, "nowhere on the page");
    await screenshot(page, SHOTS, `13-refused-edit-${px}`, { fullPage: false });
    t.equal(await card.locator(".url").innerText(), savedUrl, "the card still shows the saved URL");

    // Corrected and saved: the marks go, and the card says it was saved, in view.
    await url.fill(`${savedUrl}-v2`);
    await form.getByRole("button", { name: "Save changes" }).click();
    const saved = card.getByText("Endpoint saved.");
    await saved.waitFor();
    await assertInView(t, page, saved, "'Endpoint saved.'");
    t.equal(await card.locator(".url").innerText(), `${savedUrl}-v2`, "the card shows the new URL");
    t.equal(await page.locator(".field-error, [aria-invalid]").count(), 0, "no mark is left");
  });

  t.test(`${px}: the add form says what is wrong beside the field, focused and in view`, async (t) => {
    const { server, tenant } = await tenantWithEndpoints(t);
    const page = await openPortal(t, server, tenant, viewport);
    const form = page.getByRole("form", { name: "Add an endpoint" });
    const url = form.getByLabel("Endpoint URL (https)");

    // Checked in the page: no event chosen.
    await url.fill("https://hooks.example.com/new");
    await form.getByRole("checkbox", { name: "all events (*)" }).uncheck();
    await form.getByRole("button", { name: "Add endpoint" }).click();
    const noEvent = form.locator("fieldset .field-error");
    await noEvent.waitFor();
    t.equal(await noEvent.innerText(), "Choose at least one event (or all events).");
    await assertInView(t, page, noEvent, "the message about the events");
    t.equal(
      await page.evaluate(() => (document.activeElement as HTMLInputElement | null)?.value),
      "*",
      "the first event box has the focus",
    );

    // Refused by the service: a URL that is not https. Sent while the page is scrolled back to its top (as
    // it may be when the answer comes): the page brings the message into view itself.
    await form.getByRole("checkbox", { name: "all events (*)" }).check();
    await url.fill("http://hooks.example.com/new");
    await page.evaluate(() => window.scrollTo(0, 0));
    await form.evaluate((element) => (element as HTMLFormElement).requestSubmit());
    const refused = form.locator(".field-error", { hasText: "scheme must be https" });
    await refused.waitFor();
    t.equal(await refused.innerText(), "URL scheme must be https", "without 'Value error, '");
    t.equal(await form.locator("fieldset .field-error").count(), 0, "the corrected events are no longer marked");
    await assertInView(t, page, refused, "the message about the URL");
    t.equal(await page.evaluate(() => document.activeElement?.id), "new-url", "the URL field has the focus");
    t.equal(await url.getAttribute("aria-invalid"), "true");
    const listed = (await (await server.request("/v1/webhooks/subscriptions", { token: tenant.token })).json()) as {
      subscriptions: unknown[];
    };
    t.equal(listed.subscriptions.length, ENDPOINTS, "nothing was added");
  });
}
