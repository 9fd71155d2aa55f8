// Editing an endpoint on the /portal page in a real headless Chromium: a teammate with a portal link sees
// each endpoint's description in the list, opens Edit, changes the URL, the events and the description,
// saves, and the card shows what was saved (updateWebhookSubscription with the portal credential); a URL
// the service refuses is said in words and changes nothing; a cleared description disappears. A rate limit
// set when adding, changed and removed shows, and then no longer shows, on the card.
import t from "tap";
import { createTestTenant, startTestServer } from "../helpers/server.ts";
import { BROWSER_FILE_TIMEOUT_MS, browserSession, portalLink, screenshot } from "../helpers/browser.ts";

// Every wait below is on a condition, with the generous deadline of test/helpers/browser.ts.
t.setTimeout(BROWSER_FILE_TIMEOUT_MS);

const SHOTS = "portal";

t.test("a teammate edits an endpoint's URL, events and description and sees them on its card", async (t) => {
  const server = await startTestServer(t);
  const tenant = await createTestTenant(server.services);
  const created = await server.request("/v1/webhooks/subscriptions", {
    method: "POST",
    token: tenant.token,
    json: {
      url: "https://hooks.example.com/claims",
      events: ["intake.submitted"],
      description: "Claims intake for the review team",
    },
  });
  t.equal(created.status, 201);
  const { id } = (await created.json()) as { id: string };
  const browser = await browserSession(t);
  const page = await browser.context.newPage();
  await page.goto(await portalLink(server, tenant));

  const card = page.locator(`li[data-subscription-id="${id}"]`);
  await card.locator(".description", { hasText: "Claims intake for the review team" }).waitFor();
  t.pass("the list shows the endpoint's description");

  await card.getByRole("button", { name: "Edit" }).click();
  const form = card.getByRole("form", { name: "Edit the endpoint https://hooks.example.com/claims" });
  const url = form.getByLabel("Endpoint URL (https)");
  t.equal(await url.inputValue(), "https://hooks.example.com/claims", "the form holds the endpoint as it is");
  t.equal(await form.getByLabel("Description (optional)").inputValue(), "Claims intake for the review team");
  t.ok(await form.getByRole("checkbox", { name: "intake.submitted", exact: true }).isChecked());
  t.notOk(await form.getByRole("checkbox", { name: "all events (*)" }).isChecked());
  t.equal(await page.evaluate(() => document.activeElement?.id), `edit-${id}-url`, "the URL field has the focus");

  // A URL the service refuses: said in words beside the field, nothing changes.
  await url.fill("http://hooks.example.com/claims-v2");
  await form.getByRole("button", { name: "Save changes" }).click();
  const refusal = form.locator(".field-error");
  await refusal.waitFor();
  t.match(await refusal.innerText(), /scheme must be https/, "the rule is named");
  t.equal(await url.getAttribute("aria-invalid"), "true", "the field is marked");
  t.equal(
    await card.locator(".url").innerText(),
    "https://hooks.example.com/claims",
    "the card still shows the saved URL",
  );

  await url.fill("https://hooks.example.com/claims-v2");
  await form.getByRole("checkbox", { name: "intake.batch_submitted", exact: true }).check();
  await form.getByRole("checkbox", { name: "intake.submitted", exact: true }).uncheck();
  await form.getByLabel("Description (optional)").fill("Batch claims, moved to v2");
  await screenshot(page, SHOTS, "edit-endpoint-form");
  await form.getByRole("button", { name: "Save changes" }).click();
  await page.getByText("Endpoint saved.").waitFor();

  const saved = page.locator(`li[data-subscription-id="${id}"]`);
  await saved.locator(".url", { hasText: "https://hooks.example.com/claims-v2" }).waitFor();
  t.equal(await saved.locator(".url").innerText(), "https://hooks.example.com/claims-v2", "the new URL is shown");
  t.equal(await saved.locator(".description").innerText(), "Batch claims, moved to v2", "the new description");
  t.match(await saved.locator(".meta").first().innerText(), /intake\.batch_submitted/, "the new events");
  t.notMatch(await saved.locator(".meta").first().innerText(), /intake\.submitted/, "not the removed kind");
  t.equal(await saved.getByRole("form").count(), 0, "the form is closed");
  await screenshot(page, SHOTS, "edit-endpoint-saved");

  const stored = await server.request(`/v1/webhooks/subscriptions/${id}`, { token: tenant.token });
  t.match(await stored.json(), {
    url: "https://hooks.example.com/claims-v2",
    events: ["intake.batch_submitted"],
    description: "Batch claims, moved to v2",
    status: "active",
  });
  const [audit] = await server.services
    .db("integrator.audit_actions")
    .where({ tenant_id: tenant.tenantId, action: "webhooks.subscription_updated" });
  t.equal(audit?.actor, `portal:${tenant.subject}`, "changed with the portal credential");

  // A cleared description is none: the card shows none.
  await saved.getByRole("button", { name: "Edit" }).click();
  await saved.getByLabel("Description (optional)").fill("");
  await saved.getByRole("button", { name: "Save changes" }).click();
  await page.locator(`li[data-subscription-id="${id}"] .description`).waitFor({ state: "detached" });
  const cleared = await server.request(`/v1/webhooks/subscriptions/${id}`, { token: tenant.token });
  t.equal(((await cleared.json()) as { description: string | null }).description, null, "stored as none");
});

t.test("a teammate adds an endpoint with a rate limit, changes it and removes it, and its card says so", async (t) => {
  const server = await startTestServer(t);
  const tenant = await createTestTenant(server.services);
  const browser = await browserSession(t);
  const page = await browser.context.newPage();
  await page.goto(await portalLink(server, tenant));

  const add = page.getByRole("form", { name: "Add an endpoint" });
  await add.getByLabel("Endpoint URL (https)").fill("https://hooks.example.com/paced");
  await add.getByLabel(/^Rate limit/).fill("5");
  await add.getByRole("button", { name: "Add endpoint" }).click();
  await page.getByText("Endpoint added.").waitFor();

  const card = page.locator("li.subscription", { hasText: "https://hooks.example.com/paced" });
  await card.locator(".rate-limit").waitFor();
  t.equal(
    await card.locator(".rate-limit").innerText(),
    "Rate limit: at most 5 deliveries a second",
    "the card shows it",
  );
  const id = await card.getAttribute("data-subscription-id");
  const stored = async () =>
    (
      (await (await server.request(`/v1/webhooks/subscriptions/${id}`, { token: tenant.token })).json()) as {
        rate_limit_per_second: number | null;
      }
    ).rate_limit_per_second;
  t.equal(await stored(), 5, "stored");

  await card.getByRole("button", { name: "Edit" }).click();
  const rate = card.getByLabel(/^Rate limit/);
  t.equal(await rate.inputValue(), "5", "the edit form holds the limit as it is");
  await rate.fill("1");
  await card.getByRole("button", { name: "Save changes" }).click();
  await card.locator(".rate-limit", { hasText: "at most 1 delivery a second" }).waitFor();
  t.equal(await stored(), 1, "changed");
  await screenshot(page, SHOTS, "endpoint-rate-limit");

  // Blank is no limit: the card says nothing of one.
  await card.getByRole("button", { name: "Edit" }).click();
  await card.getByLabel(/^Rate limit/).fill("");
  await card.getByRole("button", { name: "Save changes" }).click();
  await card.locator(".rate-limit").waitFor({ state: "detached" });
  t.equal(await stored(), null, "removed");
});
