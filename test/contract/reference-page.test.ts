// The API description served by the service (/openapi.json, /openapi.yaml) and its reference page /docs:
// on by default outside production, off in production unless API_DOCS=true; the page, opened in headless
// Chromium with every request to another origin aborted, shows every operation and webhook of the document.
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import t from "tap";
import { tempDir } from "../helpers/temp-dir.ts";
import { startTestServer } from "../helpers/server.ts";
import {
  BROWSER_DEADLINE_MS,
  BROWSER_FILE_TIMEOUT_MS,
  launchChromium,
  withBrowserDeadline,
} from "../helpers/browser.ts";
import { loadDocument } from "../../http/openapi-document.ts";

const METHODS = ["get", "put", "post", "delete", "patch"] as const;

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
  const script = await server.request("/docs/scalar.js");
  t.equal(script.status, 200);
  t.ok(Number(script.headers.get("content-length")) > 1_000_000, "the bundled reference script");
});

t.test("production serves no description and no reference page by default", async (t) => {
  const server = await startTestServer(t, {
    env: { NODE_ENV: "production", PUBLIC_BASE_URL: "https://integrator.example.com" },
  });
  for (const path of ["/openapi.json", "/openapi.yaml", "/docs", "/docs/scalar.js"]) {
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
});

t.test("API_DOCS=false turns them off outside production", async (t) => {
  const server = await startTestServer(t, { env: { API_DOCS: "false" } });
  t.equal((await server.request("/openapi.json")).status, 404);
});

t.test("the reference page shows every operation and webhook offline, in headless Chromium", async (t) => {
  const server = await startTestServer(t);
  const browser = await launchChromium(t);
  const context = withBrowserDeadline(await browser.newContext({ serviceWorkers: "block" }));
  const origin = new URL(server.baseUrl).origin;
  const aborted: string[] = [];
  await context.route("**/*", async (route) => {
    const url = route.request().url();
    if (new URL(url).origin === origin) return route.continue();
    aborted.push(url);
    return route.abort("internetdisconnected");
  });
  const page = await context.newPage();
  const pageErrors: string[] = [];
  page.on("pageerror", (error) => pageErrors.push(error.message));
  // The bundle's stylesheet names web fonts on the vendor's host: the page's CSP refuses them (the page
  // falls back to local fonts), so nothing leaves the machine. Any other violation is a defect.
  const cspViolations: string[] = [];
  page.on("console", (message) => {
    const text = message.text();
    if (/Content Security Policy/i.test(text) && !/Loading the font .* violates .*font-src/.test(text))
      cspViolations.push(text);
  });
  await page.goto(`${server.baseUrl}/docs`, { waitUntil: "load" });

  const description = loadDocument();
  const expected: string[] = [];
  for (const [pathKey, item] of Object.entries(description.paths ?? {}))
    for (const method of METHODS) {
      const operation = (item as Record<string, { summary?: string } | undefined>)[method];
      if (operation?.summary) expected.push(operation.summary);
      else if (operation) expected.push(pathKey);
    }
  for (const [name] of Object.entries(description.webhooks ?? {})) expected.push(name);
  t.ok(expected.length > 20, `${expected.length} operations and webhooks to find`);

  // Scalar renders sections as they come into view: scroll on (each time the page is asked) until every
  // name is on the page.
  await page
    .waitForFunction(
      (names) => {
        window.scrollBy(0, window.innerHeight * 2);
        const text = document.body.innerText;
        return names.every((name) => text.includes(name));
      },
      expected,
      { polling: 250, timeout: BROWSER_DEADLINE_MS },
    )
    .catch(() => undefined);
  const shown = await page.evaluate(() => document.body.innerText);
  const missing = expected.filter((name) => !shown.includes(name));
  t.same(missing, [], "every operation summary and webhook name appears on the page");
  t.same(pageErrors, [], "no script errors");
  t.same(cspViolations, [], "no Content-Security-Policy violations");
  t.comment(`requests to other origins aborted: ${aborted.length}`);
});

t.test("npm run docs writes the same page as a static folder that names no other host", async (t) => {
  const directory = tempDir(t, "reference-site-");
  execFileSync(process.execPath, [path.join(import.meta.dirname, "../../scripts/docs.ts"), directory]);
  t.same(fs.readdirSync(directory).sort(), ["index.html", "init.js", "openapi.json", "openapi.yaml", "scalar.js"]);
  const html = fs.readFileSync(path.join(directory, "index.html"), "utf8");
  t.notMatch(html, /https?:\/\//, "the page loads nothing from another host");
  t.match(html, /<script src="\.\/scalar\.js"><\/script>/);
  t.equal(
    fs.readFileSync(path.join(directory, "openapi.json"), "utf8"),
    fs.readFileSync(new URL("../../generated/openapi.json", import.meta.url), "utf8"),
  );
});
