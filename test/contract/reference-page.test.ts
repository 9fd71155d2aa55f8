// The API description served by the service (/openapi.json, /openapi.yaml) and its reference page /docs:
// on by default outside production, off in production unless API_DOCS=true. The page in headless Chromium,
// as a person meets it: the first viewport shows the introduction and the sidebar (text a person can see,
// not a loading skeleton) and nothing of the vendor's (no "Open API Client", no "Powered by"), search
// finds operations, schemas and webhooks, each operation shows the contract package's call first with the
// generic snippets beside it, try it sends a pasted bearer token that the service accepts, every
// operation and webhook is on the page, and every request the page makes goes to the service's own origin
// on loopback: it works offline. Screenshots go to .artifacts/reference/ (docs/reference/ holds copies).
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import t, { type Test } from "tap";
import type { Page } from "playwright-core";
import { tempDir } from "../helpers/temp-dir.ts";
import { createTestTenant, startTestServer, type TestServer } from "../helpers/server.ts";
import {
  BROWSER_DEADLINE_MS,
  BROWSER_FILE_TIMEOUT_MS,
  fileChromium,
  screenshot,
  withBrowserDeadline,
} from "../helpers/browser.ts";
import { waitFor } from "../helpers/wait.ts";
import { loadDocument } from "../../http/openapi-document.ts";
import { findSubmission } from "../../db/intake.ts";

const METHODS = ["get", "put", "post", "delete", "patch"] as const;
const SHOTS = "reference";
const LOOPBACK_HOSTS = new Set(["127.0.0.1", "localhost", "[::1]"]);

// The browser waits below are on conditions, with the generous deadline of test/helpers/browser.ts.
t.setTimeout(BROWSER_FILE_TIMEOUT_MS);

t.test("the description is served in JSON and YAML, byte for byte the bundled copy", async (t) => {
  const server = await startTestServer(t);
  const json = await server.request("/openapi.json");
  t.equal(json.status, 200);
  t.match(json.headers.get("content-type"), /^application\/json/);
  t.equal(await json.text(), fs.readFileSync(new URL("../../generated/openapi.json", import.meta.url), "utf8"));
  const yaml = await server.request("/openapi.yaml");
  t.equal(yaml.status, 200);
  t.match(yaml.headers.get("content-type"), /^application\/yaml/);
  t.equal(await yaml.text(), fs.readFileSync(new URL("../../openapi/openapi.yaml", import.meta.url), "utf8"));
  const page = await server.request("/docs");
  t.equal(page.status, 200);
  t.match(
    page.headers.get("content-security-policy"),
    /script-src 'self'(;|$)/,
    "its own CSP: only its bundled script",
  );
  const root = await server.request("/", { redirect: "manual" });
  t.equal(root.status, 302, "outside production / redirects ...");
  t.equal(root.headers.get("location"), "/docs", "... to the reference page");
  const script = await server.request("/docs/scalar.js");
  t.equal(script.status, 200);
  t.ok(Number(script.headers.get("content-length")) > 1_000_000, "the bundled reference script");
});

t.test("production serves no description and no reference page by default", async (t) => {
  const server = await startTestServer(t, {
    env: { NODE_ENV: "production", PUBLIC_BASE_URL: "https://integrator.example.com" },
  });
  for (const path of ["/", "/openapi.json", "/openapi.yaml", "/docs", "/docs/scalar.js"]) {
    const res = await server.request(path);
    t.equal(res.status, 404, path);
  }
});

t.test("production serves them with API_DOCS=true", async (t) => {
  const server = await startTestServer(t, {
    env: { NODE_ENV: "production", PUBLIC_BASE_URL: "https://integrator.example.com", API_DOCS: "true" },
  });
  t.equal((await server.request("/openapi.json")).status, 200);
  t.equal((await server.request("/docs")).status, 200);
  t.equal((await server.request("/", { redirect: "manual" })).status, 404, "/ is no redirect in production");
});

t.test("API_DOCS=false turns them off outside production", async (t) => {
  const server = await startTestServer(t, { env: { API_DOCS: "false" } });
  t.equal((await server.request("/openapi.json")).status, 404);
  t.equal((await server.request("/", { redirect: "manual" })).status, 404, "no redirect to a page not served");
});

/**
 * One browser context for the page's tests, recording every request and aborting any to another origin.
 * Its tests share its HTTP cache (Scalar's script, an hour's max-age, is fetched and compiled once, as on a
 * person's second visit). None depends on what an earlier tab left in its storage (the narrow deep link,
 * opened after the wide one chose Curl, still finds the package's call shown first).
 */
async function referenceContext(t: Test, server: TestServer) {
  const browser = await fileChromium();
  const context = withBrowserDeadline(await browser.newContext({ serviceWorkers: "block" }));
  t.teardown(() => context.close());
  const origin = new URL(server.baseUrl).origin;
  await context.route("**/*", (route) =>
    new URL(route.request().url()).origin === origin ? route.continue() : route.abort("internetdisconnected"),
  );
  return { context, origin };
}

/** The page in a new tab of the context, closed when `t` ends, with the requests and problems of that tab. */
async function openReference(
  t: Test,
  { context, origin }: Awaited<ReturnType<typeof referenceContext>>,
  viewport = { width: 1280, height: 800 },
  address = "/docs",
) {
  const page = await context.newPage();
  t.teardown(() => page.close());
  await page.setViewportSize(viewport);
  const requests: string[] = [];
  const problems: string[] = [];
  page.on("request", (request) => requests.push(request.url()));
  page.on("pageerror", (error) => problems.push(error.message));
  page.on("console", (message) => {
    if (message.type() === "error" || /Content Security Policy|not found in configList/i.test(message.text()))
      problems.push(message.text());
  });
  await page.goto(`${origin}${address}`, { waitUntil: "load" });
  // Each check is of both: no request to another origin, and none to a host that is not this machine.
  const foreign = () =>
    requests.filter((url) => new URL(url).origin !== origin || !LOOPBACK_HOSTS.has(new URL(url).hostname));
  return { page, requests, problems, foreign };
}

/**
 * Waits until every text is shown by an element a person can see inside the first viewport (rendered,
 * not hidden, not transparent, its box on screen); answers the texts still missing after the wait.
 */
async function waitUntilVisibleInViewport(page: Page, texts: string[], within = "body"): Promise<string[]> {
  const probe = ([wanted, scope]: [string[], string]) => {
    const root = document.querySelector(scope);
    if (!root) return wanted;
    const normal = (text: string) => text.replace(/\s+/g, " ").trim();
    const shown = (element: Element) => {
      const box = element.getBoundingClientRect();
      return (
        element.checkVisibility({ opacityProperty: true, visibilityProperty: true }) &&
        box.width > 0 &&
        box.height > 0 &&
        box.bottom > 0 &&
        box.right > 0 &&
        box.top < window.innerHeight &&
        box.left < window.innerWidth
      );
    };
    const elements = [...root.querySelectorAll("*")].filter((element) => element instanceof HTMLElement);
    return wanted.filter(
      (text) =>
        !elements.some(
          (element) =>
            normal(element.innerText).includes(text) &&
            ![...element.children].some(
              (child) => child instanceof HTMLElement && normal(child.innerText).includes(text),
            ) &&
            shown(element),
        ),
    );
  };
  const handle = await page
    .waitForFunction(probe, [texts, within] as [string[], string], { timeout: BROWSER_DEADLINE_MS, polling: 200 })
    .catch(() => undefined);
  if (handle) return [];
  return page.evaluate(probe, [texts, within] as [string[], string]);
}

t.test("the reference page in headless Chromium, offline", async (t) => {
  const server = await startTestServer(t);
  const description = loadDocument();
  const reference = await referenceContext(t, server);

  // The first screen (wide, then narrowed), the whole page, search and try it are one visit, as a person
  // makes it: one load. The deep links below each have a navigation and a tab of their own.
  const visit = await openReference(t, reference);

  await t.test("the first screen shows the introduction and the sidebar, not a loading skeleton", async (t) => {
    const { page, problems, foreign } = visit;
    const introduction = (description.info.description ?? "").split("\n")[0]?.trim() ?? "";
    t.match(introduction, /^The Integrator API registers review work/, "the introduction's first sentence");
    const missing = await waitUntilVisibleInViewport(page, [description.info.title, introduction]);
    t.same(missing, [], "the title and the introduction are visible in the first viewport");
    const sidebar = ["Introduction", "intake", "Submit one document for review", "webhooks", "health", "Schemas"];
    t.same(await waitUntilVisibleInViewport(page, sidebar, "aside, nav"), [], "sidebar entries are visible");
    const skeletons = await page.evaluate(
      () =>
        [...document.querySelectorAll('[class*="skeleton"], [class*="loading"], [aria-busy="true"]')].filter(
          (element) => {
            const box = element.getBoundingClientRect();
            return element.checkVisibility() && box.width > 0 && box.height > 0 && box.top < window.innerHeight;
          },
        ).length,
    );
    t.equal(skeletons, 0, "no loading placeholder is left on the first screen");
    const vendor = await page.evaluate(() => document.body.innerText);
    t.notMatch(vendor, /Ask AI|Generate MCP|Developer Tools/, "no vendor AI, MCP or developer-tools buttons");
    t.notMatch(vendor, /Open API Client/, "no link to the vendor's API client");
    t.notMatch(vendor, /Powered by/, "no 'Powered by' badge");
    t.equal(
      await page
        .getByText(/Powered by/)
        .filter({ visible: true })
        .count(),
      0,
      "none visible anywhere",
    );
    t.same(problems, [], "no script errors, console errors or CSP violations");
    t.same(foreign(), [], "no request leaves the host (fonts included)");
    await screenshot(page, SHOTS, "01-first-screen", { fullPage: false });
  });

  await t.test("at 360 px the first screen and the opened menu show the page's own content only", async (t) => {
    // The same first screen in a window narrowed to a phone's width, and back.
    const { page, problems, foreign } = visit;
    await page.setViewportSize({ width: 360, height: 740 });
    t.same(await waitUntilVisibleInViewport(page, [description.info.title]), [], "the title is visible");
    await screenshot(page, SHOTS, "02-first-screen-360px", { fullPage: false });
    const menu = page.getByRole("button", { name: /menu/i }).first();
    await menu.click();
    t.same(await waitUntilVisibleInViewport(page, ["Submit one document for review"]), [], "the menu lists operations");
    const shown = await page.evaluate(() => document.body.innerText);
    t.notMatch(shown, /Powered by|Open API Client/, "and nothing of the vendor's");
    t.same(problems, [], "no script errors");
    t.same(foreign(), [], "no request leaves the host");
    await menu.click();
    await page.setViewportSize({ width: 1280, height: 800 });
  });

  await t.test("every operation and webhook of the document is on the page", async (t) => {
    const { page, problems, foreign } = visit;
    const expected: string[] = [];
    for (const [pathKey, item] of Object.entries(description.paths ?? {}))
      for (const method of METHODS) {
        const operation = (item as Record<string, { summary?: string } | undefined>)[method];
        if (operation?.summary) expected.push(operation.summary);
        else if (operation) expected.push(pathKey);
      }
    for (const [name] of Object.entries(description.webhooks ?? {})) expected.push(name);
    t.ok(expected.length > 20, `${expected.length} operations and webhooks to find`);
    // Scalar renders sections as they come into view: scroll on until every name is on the page.
    const read = () =>
      page.evaluate(() => {
        window.scrollBy(0, window.innerHeight * 2);
        return document.body.innerText;
      });
    const text = await waitFor(read, (text) => expected.every((name) => text.includes(name)), {
      seconds: BROWSER_DEADLINE_MS / 1000,
      intervalMs: 250,
    });
    t.same(
      expected.filter((name) => !text.includes(name)),
      [],
      "every operation summary and webhook name appears on the page",
    );
    t.same(problems, [], "no script errors");
    t.same(foreign(), [], "no request leaves the host");
  });

  await t.test("search finds operations, schemas and webhooks", async (t) => {
    const { page, problems, foreign } = visit;
    await page
      .getByRole("button", { name: /search/i })
      .first()
      .click();
    await page.getByRole("combobox", { name: /search/i }).fill("submit");
    const results = page.getByRole("option");
    const kinds = async () => {
      const texts = (await results.allInnerTexts()).map((text) => text.replace(/\s+/g, " "));
      return {
        operation: texts.some((text) => /Operation: Submit one document for review\b.*\/v1\/intake\/submit/.test(text)),
        schema: texts.some((text) => /Schemas: IntakeSubmitRequest\b/.test(text)),
        webhook: texts.some((text) => /Webhook: intake\.submitted\b/.test(text)),
      };
    };
    const found = await waitFor(kinds, (k) => k.operation && k.schema && k.webhook, {
      seconds: BROWSER_DEADLINE_MS / 1000,
      intervalMs: 200,
    });
    t.same(found, { operation: true, schema: true, webhook: true }, "an operation, a schema and a webhook");
    t.notOk(await page.getByText("No results found").isVisible(), "not 'No results found'");
    await screenshot(page, SHOTS, "03-search", { fullPage: false });
    t.same(problems, [], "no script errors");
    t.same(foreign(), [], "no request leaves the host");
    await page.keyboard.press("Escape");
    await page.getByRole("combobox", { name: /search/i }).waitFor({ state: "hidden" });
  });

  await t.test("try it sends a pasted bearer token to the service", async (t) => {
    const who = await createTestTenant(server.services);
    const { page, problems, foreign } = visit;
    const tokenField = page.getByLabel(/bearer token/i).first();
    await tokenField.fill(who.token);
    await page.locator("aside, nav").getByText("Submit one document for review").first().click();
    await page
      .getByRole("button", { name: /test request.*\/v1\/intake\/submit\b/is })
      .first()
      .click();
    const answered = page.waitForResponse((res) => new URL(res.url()).pathname === "/v1/intake/submit");
    await page
      .getByRole("button", { name: /^send post request to/i })
      .or(page.getByRole("button", { name: /^send\b/i }))
      .first()
      .click();
    const res = await answered;
    t.equal(res.request().headers()["authorization"], `Bearer ${who.token}`, "the request carries the pasted token");
    t.equal(res.status(), 201, "the service accepted it");
    const body = (await res.json()) as { id: string };
    // Seen server-side: the submission exists for the token's tenant, created by the token's subject.
    const stored = await findSubmission(server.services.db, who.tenantId, body.id);
    t.equal(stored?.submission.created_by, who.subject, "the service stored it for the token's tenant and subject");
    await page.getByText("201 Created").first().waitFor();
    t.equal(
      await page.getByText("Open API Client").filter({ visible: true }).count(),
      0,
      "the request window links to no vendor client either",
    );
    // The address bar's progress bar runs on to its end after the answer, on a timer of Scalar's (no CSS
    // animation a screenshot could finish): the picture waits for it to be back at rest, off to the left.
    await page.waitForFunction(() =>
      [...document.querySelectorAll<HTMLElement>('[style*="translate3d"][style*="color-mix"]')].every((bar) =>
        bar.style.transform.startsWith("translate3d(-100%"),
      ),
    );
    await screenshot(page, SHOTS, "04-try-it-bearer-token", { fullPage: false });
    t.same(problems, [], "no script errors");
    t.same(foreign(), [], "no request leaves the host");
  });

  await t.test("each operation shows the contract package's call first, the generic snippets beside it", async (t) => {
    for (const viewport of [
      { width: 1280, height: 800 },
      { width: 360, height: 740 },
    ]) {
      // A link to the operation, as a person follows one: a navigation of its own, in a tab of its own.
      const anchor = "api/tag/webhooks/GET/v1/webhooks/deliveries";
      const { page, problems, foreign } = await openReference(t, reference, viewport, `/docs#${anchor}`);
      const section = `section[id="${anchor}"]`;
      const card = page.locator(`${section} .request-card`);
      await card.waitFor();
      await card.scrollIntoViewIfNeeded();
      const sdk = [
        'import { createIntegratorClient } from "integrator-api-contract";',
        'const { data, error } = await api.GET("/v1/webhooks/deliveries", {',
        'status: "failed",',
      ];
      t.same(
        await waitUntilVisibleInViewport(page, sdk, `${section} .request-card`),
        [],
        `${viewport.width} px: the SDK's call for listWebhookDeliveries, a filter's example included, is visible`,
      );
      if (viewport.width === 1280) {
        await screenshot(page, SHOTS, "05-sdk-sample", { fullPage: false });
        // The snippets Scalar generates are one choice away: Shell's curl, for one.
        await card.getByRole("button", { name: "integrator-api-contract" }).click();
        const options = await page.getByRole("option").allInnerTexts();
        t.equal(options[0], "integrator-api-contract", "the package's call is the first choice");
        t.ok(
          options.includes("Curl") && options.includes("Fetch"),
          `curl and fetch beside it (${options.length} in all)`,
        );
        await page.getByRole("option", { name: "Curl", exact: true }).click();
        t.same(
          await waitUntilVisibleInViewport(
            page,
            [`curl ${new URL(server.baseUrl).origin}/v1/webhooks/deliveries`],
            `${section} .request-card`,
          ),
          [],
          "the generic snippet shows when chosen",
        );
      }
      t.same(problems, [], "no script errors");
      t.same(foreign(), [], "no request leaves the host");
    }
  });
});

t.test("npm run build writes the same page as a static folder that names no other host", async (t) => {
  const directory = tempDir(t, "reference-site-");
  execFileSync(process.execPath, [path.join(import.meta.dirname, "../../scripts/docs.ts"), directory]);
  t.same(fs.readdirSync(directory).sort(), [
    "changelog.atom",
    "changelog.html",
    "index.html",
    "init.js",
    "openapi.json",
    "openapi.yaml",
    "scalar.js",
  ]);
  const html = fs.readFileSync(path.join(directory, "index.html"), "utf8");
  t.notMatch(html, /https?:\/\//, "the page loads nothing from another host");
  t.match(html, /<script src="\.\/scalar\.js"><\/script>/);
  t.match(html, /<div id="reference" data-document-url="\.\/openapi\.json"/, "the element Scalar is started on");
  t.notMatch(html, /id="api-reference"/, "no element Scalar would mount an empty reference on by itself");
  t.equal(
    fs.readFileSync(path.join(directory, "openapi.json"), "utf8"),
    fs.readFileSync(new URL("../../generated/openapi.json", import.meta.url), "utf8"),
  );
});
