// The contract's changelog beside the reference page: /docs/changelog (each released version of CHANGELOG.md)
// and its Atom feed /docs/changelog.atom, which the reference page's head names as its alternate. The feed is
// found, fetched and parsed the way a feed reader does it, with a real XML parser (Chromium's), and must
// carry what a reader needs: the feed's id, title and updated time, and an entry per release with its own.
import fs from "node:fs";
import path from "node:path";
import t from "tap";
import { BROWSER_FILE_TIMEOUT_MS, browserSession } from "../helpers/browser.ts";
import { startTestServer } from "../helpers/server.ts";
import { tempDir } from "../helpers/temp-dir.ts";
import { changelogReleases, markdownToHtml } from "../../http/changelog.ts";
import { writeReferenceSite } from "../../scripts/docs.ts";

t.setTimeout(BROWSER_FILE_TIMEOUT_MS);

const ROOT = path.resolve(import.meta.dirname, "../..");
const releases = changelogReleases(fs.readFileSync(path.join(ROOT, "CHANGELOG.md"), "utf8"));

t.test("the CHANGELOG's Markdown as HTML", async (t) => {
  t.equal(
    markdownToHtml(
      "- `<b>` and **strong** and *Edit*\n  continued, [a file](docs/x.md), [a site](https://example.com)",
    ),
    '<ul>\n<li>\n<code>&#60;b&#62;</code> and <strong>strong</strong> and <em>Edit</em> continued, a file, <a href="https://example.com">a site</a>\n</li>\n</ul>',
  );
  t.equal(
    markdownToHtml(
      "Added:\n\n- Fields:\n  - `A`: `b`,\n    `c`\n  - `D`: `e`\n- Schemas: `F`.\n\n### Fixed\nA <script>.",
    ),
    [
      "<p>Added:</p>",
      "<ul>",
      "<li>",
      "Fields:",
      "<ul>",
      "<li>",
      "<code>A</code>: <code>b</code>, <code>c</code>",
      "</li>",
      "<li>",
      "<code>D</code>: <code>e</code>",
      "</li>",
      "</ul>",
      "</li>",
      "<li>",
      "Schemas: <code>F</code>.",
      "</li>",
      "</ul>",
      "<h3>Fixed</h3>",
      "<p>A &#60;script&#62;.</p>",
    ].join("\n"),
  );
  for (const release of releases) {
    const html = markdownToHtml(release.body);
    const text = html.replace(/<code>[^<]*<\/code>/g, "");
    t.notMatch(text, /`|\*\*|^#|\]\(/m, `${release.version}: no Markdown is left over outside code`);
  }
});

t.test("the service serves the changelog and its Atom feed, linked from the reference page", async (t) => {
  t.ok(releases.length > 0, "CHANGELOG.md has released versions");
  const server = await startTestServer(t);

  const page = await server.request("/docs/changelog");
  t.equal(page.status, 200);
  t.match(page.headers.get("content-type"), /^text\/html/);
  t.match(page.headers.get("content-security-policy"), /default-src 'none'/, "the reference page's CSP");
  const html = await page.text();
  for (const release of releases) {
    t.match(html, `<section id="v${release.version}">`, `${release.version} has its section and anchor`);
    t.match(html, `<h2>${release.version} <small>${release.date}`, `${release.version} with its date`);
  }
  t.match(html, '<link rel="alternate" type="application/atom+xml"', "the page names its feed");
  t.notMatch(html, "<h2>Unreleased", "what is not released is not published");

  const atom = await server.request("/docs/changelog.atom");
  t.equal(atom.status, 200);
  t.match(atom.headers.get("content-type"), /^application\/atom\+xml; charset=utf-8/);

  const { context, problems } = await browserSession(t);
  const browserPage = await context.newPage();
  await browserPage.goto(`${server.baseUrl}/docs`);
  const feedUrl = await browserPage.evaluate(
    () => document.querySelector<HTMLLinkElement>('head link[rel="alternate"][type="application/atom+xml"]')?.href,
  );
  t.equal(feedUrl, `${server.baseUrl}/docs/changelog.atom`, "the reference page's head links the feed");
  t.equal(
    await browserPage.evaluate(() => document.querySelector<HTMLAnchorElement>("a[href='/docs/changelog']")?.innerText),
    "Changelog",
    "and a person sees a link to the changelog",
  );

  // What a feed reader reads, parsed by Chromium's XML parser (the one it uses for XML documents).
  const feed = await browserPage.evaluate(async (url: string) => {
    const ATOM = "http://www.w3.org/2005/Atom";
    const parse = (text: string) => new DOMParser().parseFromString(text, "application/xml");
    const refused = (xml: Document) => xml.getElementsByTagName("parsererror").length > 0;
    const text = await (await fetch(url)).text();
    const xml = parse(text);
    const child = (element: Element, name: string) =>
      [...element.children].find((node) => node.namespaceURI === ATOM && node.localName === name);
    const root = xml.documentElement;
    return {
      brokenIsRefused: refused(parse(text.replace("</feed>", "</fed>"))),
      wellFormed: !refused(xml),
      root: `${root.namespaceURI} ${root.localName}`,
      id: child(root, "id")?.textContent,
      title: child(root, "title")?.textContent,
      updated: child(root, "updated")?.textContent,
      author: child(root, "author")?.textContent?.trim(),
      self: [...root.children]
        .find((node) => node.localName === "link" && node.getAttribute("rel") === "self")
        ?.getAttribute("href"),
      entries: [...root.children]
        .filter((node) => node.namespaceURI === ATOM && node.localName === "entry")
        .map((entry) => ({
          id: child(entry, "id")?.textContent,
          title: child(entry, "title")?.textContent,
          updated: child(entry, "updated")?.textContent,
          link: new URL(child(entry, "link")?.getAttribute("href") ?? "", url).href,
          contentType: child(entry, "content")?.getAttribute("type"),
          content: child(entry, "content")?.textContent,
        })),
    };
  }, feedUrl ?? "");
  t.equal(feed.brokenIsRefused, true, "the parser refuses XML that is not well-formed");
  t.equal(feed.wellFormed, true, "the feed is well-formed XML");
  t.equal(feed.root, "http://www.w3.org/2005/Atom feed", "an Atom feed");
  t.match(feed.id, /^urn:uuid:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/, "the feed's id");
  t.equal(feed.title, "Integrator API changelog");
  const newest = [...releases].sort((a, b) => b.date.localeCompare(a.date))[0];
  t.equal(feed.updated, `${newest?.date}T00:00:00Z`, "updated: the newest release's date (RFC 3339)");
  t.equal(feed.author, "Integrator API", "an author, which Atom requires");
  t.equal(feed.self, "/docs/changelog.atom", "its own address");
  t.equal(feed.entries.length, releases.length, "an entry per released version");
  t.equal(new Set(feed.entries.map((entry) => entry.id)).size, releases.length, "each with an id of its own");
  for (const [index, release] of releases.entries()) {
    const entry = feed.entries[index];
    t.match(entry?.id, /^urn:uuid:[0-9a-f-]{36}$/, `${release.version}: id`);
    t.equal(entry?.title, `Integrator API ${release.version}`, `${release.version}: title`);
    t.equal(entry?.updated, `${release.date}T00:00:00Z`, `${release.version}: updated`);
    t.equal(
      entry?.link,
      `${server.baseUrl}/docs/changelog#v${release.version}`,
      `${release.version}: its place on the page`,
    );
    t.equal(entry?.contentType, "html");
    t.equal(entry?.content, markdownToHtml(release.body), `${release.version}: the section, as HTML`);
  }
  const again = await (await server.request("/docs/changelog.atom")).text();
  t.equal(again, await (await server.request("/docs/changelog.atom")).text(), "the same feed every time: ids stay");

  await browserPage.goto(`${server.baseUrl}/docs/changelog`);
  t.equal(await browserPage.locator("h1").innerText(), "Integrator API changelog");
  t.equal(await browserPage.locator("section h2").count(), releases.length);
  t.same(problems, [], "no console errors or CSP violations");
});

t.test("production serves no changelog unless API_DOCS=true, as the rest of /docs", async (t) => {
  const production = { NODE_ENV: "production", PUBLIC_BASE_URL: "https://integrator.example.com" };
  const off = await startTestServer(t, { env: production });
  for (const url of ["/docs/changelog", "/docs/changelog.atom"]) t.equal((await off.request(url)).status, 404, url);
  const on = await startTestServer(t, { env: { ...production, API_DOCS: "true" } });
  for (const url of ["/docs/changelog", "/docs/changelog.atom"]) t.equal((await on.request(url)).status, 200, url);
});

t.test("npm run build writes the changelog and its feed beside the reference page, linked relatively", async (t) => {
  const directory = tempDir(t, "reference-site-");
  writeReferenceSite(directory);
  const read = (name: string) => fs.readFileSync(path.join(directory, name), "utf8");
  t.match(
    read("index.html"),
    '<link rel="alternate" type="application/atom+xml" title="Integrator API changelog" href="./changelog.atom" />',
  );
  t.match(read("index.html"), '<a href="./changelog.html">Changelog</a>');
  t.match(read("changelog.html"), '<a href="./index.html">API reference</a>');
  const feed = read("changelog.atom");
  t.match(feed, '<link rel="self" type="application/atom+xml" href="./changelog.atom"/>');
  for (const release of releases) t.match(feed, `href="./changelog.html#v${release.version}"`);
  t.notMatch(read("changelog.html"), /src="https?:/, "the page loads nothing from another host");
});
