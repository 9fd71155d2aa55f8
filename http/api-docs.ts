// The API description and its reference page: GET /openapi.json (the bundled copy), /openapi.yaml (the
// hand-written source, self-contained) and /docs, a Scalar page whose script is served from the installed
// @scalar/api-reference package (no CDN, no web fonts, no vendor AI or MCP features, no link to the
// vendor's client or site: it works offline, and every request the page makes goes to this origin); beside
// it the contract's changelog, /docs/changelog, and its Atom feed, /docs/changelog.atom (http/changelog.ts).
// Served when config.serveApiDocs (API_DOCS; by default everywhere but production). `npm run build` writes
// the same pages as a static folder.
import fs from "node:fs";
import express, { type Router } from "express";
import { changelogFeed, changelogPageHtml, changelogReleases, escapeHtml, type ChangelogLinks } from "./changelog.ts";

const DOCUMENT_JSON = new URL("../generated/openapi.json", import.meta.url);
const DOCUMENT_YAML = new URL("../openapi/openapi.yaml", import.meta.url);
export const CHANGELOG_MARKDOWN = new URL("../CHANGELOG.md", import.meta.url);
/** Scalar's self-contained browser build (one file, no chunks). */
export const REFERENCE_SCRIPT = new URL(
  "../node_modules/@scalar/api-reference/dist/browser/standalone.js",
  import.meta.url,
);

/**
 * The page's own Content-Security-Policy: its scripts only from this origin (no inline script, no eval),
 * Scalar's injected styles inline, nothing framed, no form posts; fetches only to this origin (the document,
 * and "try it" calls against this server).
 */
export const REFERENCE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "font-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join("; ");

export interface ReferencePageLinks {
  /** Where the page finds the document, Scalar's script and its start script. */
  documentUrl: string;
  scriptUrl: string;
  initUrl: string;
  /** Served by the API itself: "try it" calls go to the page's own origin. */
  sameOriginServer: boolean;
  /** The contract's changelog and its Atom feed, linked from the page's head and from a line above it. */
  changelogUrl: string;
  feedUrl: string;
}

/**
 * The element Scalar mounts on. Not "api-reference": Scalar's script mounts a second, empty reference on
 * an element of that id by itself (its HTML API), which showed a loading skeleton that never finished,
 * the vendor's AI and MCP buttons and a search over no document, above the configured one.
 */
export const REFERENCE_ELEMENT_ID = "reference";

export function referencePageHtml(title: string, links: ReferencePageLinks): string {
  const escape = escapeHtml;
  return `<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8" />
    <meta name="viewport" content="width=device-width, initial-scale=1" />
    <link rel="icon" href="data:," />
    <link rel="alternate" type="application/atom+xml" title="${escape(title)} changelog" href="${escape(links.feedUrl)}" />
    <title>${escape(title)} reference</title>
    <style>
      .changelog-links { margin: 0; padding: 0.25rem 1rem; font: 14px/1.5 system-ui, sans-serif; text-align: right; }
      .changelog-links a { margin-left: 1rem; }
    </style>
  </head>
  <body>
    <p class="changelog-links"><a href="${escape(links.changelogUrl)}">Changelog</a><a href="${escape(links.feedUrl)}">Atom feed</a></p>
    <div id="${REFERENCE_ELEMENT_ID}" data-document-url="${escape(links.documentUrl)}" data-title="${escape(title)}" data-same-origin-server="${String(links.sameOriginServer)}"></div>
    <script src="${escape(links.scriptUrl)}"></script>
    <script src="${escape(links.initUrl)}"></script>
  </body>
</html>
`;
}

/**
 * Styles given to Scalar as its customCss: the sidebar footer's "Powered by Scalar" link, which no option
 * turns off (Scalar's maintainers answer to use custom CSS), is not shown.
 */
export const REFERENCE_CSS = 'a[href="https://www.scalar.com"] { display: none; }';

/**
 * Starts Scalar on #reference; a file of its own so that the page needs no inline script. The document is
 * given by url with a title and slug, so search indexes it (operations, schemas, webhooks). Everything that
 * would call the vendor or send a person there is off: no web fonts (the page uses the system's), no
 * telemetry, no AI agent, no MCP button, no developer tools bar, no "Open API Client" button
 * (hideClientButton) and no "Powered by" link (REFERENCE_CSS). Each operation's code example opens on the
 * contract package's call, the document's x-codeSamples (scripts/code-samples.ts). Try it offers a pasted bearer token first (an access token from
 * POST /token, sent as Authorization: Bearer); the document's OAuth2 flows stay selectable.
 */
export const REFERENCE_INIT_SCRIPT = `(function () {
  var element = document.getElementById("${REFERENCE_ELEMENT_ID}");
  var configuration = {
    url: element.getAttribute("data-document-url"),
    title: element.getAttribute("data-title"),
    slug: "api",
    withDefaultFonts: false,
    telemetry: false,
    showDeveloperTools: "never",
    agent: { disabled: true },
    mcp: { disabled: true },
    hideClientButton: true,
    customCss: ${JSON.stringify(REFERENCE_CSS)},
    defaultOpenAllTags: true,
    modelsSectionLabel: "Schemas",
    authentication: {
      preferredSecurityScheme: "BearerToken",
      securitySchemes: {
        BearerToken: {
          type: "http",
          scheme: "bearer",
          bearerFormat: "JWT",
          description: "Paste an access token (POST /token answers one); it is sent as Authorization: Bearer.",
        },
      },
    },
  };
  if (element.getAttribute("data-same-origin-server") === "true")
    configuration.servers = [{ url: window.location.origin, description: "This server" }];
  window.Scalar.createApiReference(element, configuration);
})();
`;

function documentTitle(): string {
  const document = JSON.parse(fs.readFileSync(DOCUMENT_JSON, "utf8")) as { info?: { title?: string } };
  return document.info?.title ?? "API";
}

/** The changelog page and its feed from CHANGELOG.md as it is now (a release rewrites it). */
export function changelogDocuments(links: ChangelogLinks): { page: string; feed: string } {
  const releases = changelogReleases(fs.readFileSync(CHANGELOG_MARKDOWN, "utf8"));
  return { page: changelogPageHtml(releases, links), feed: changelogFeed(releases, links) };
}

/**
 * The routes; mounted by the app only when the description is to be served. With redirectRoot (outside
 * production), GET / answers a redirect to /docs, so a person opening the service's address finds it.
 */
export function apiDocsRouter(options: { redirectRoot?: boolean } = {}): Router {
  const router = express.Router();
  if (options.redirectRoot)
    router.get("/", (_req, res) => {
      res.set("Cache-Control", "no-cache");
      res.redirect(302, "/docs");
    });
  const title = documentTitle();
  const page = referencePageHtml(title, {
    documentUrl: "/openapi.json",
    scriptUrl: "/docs/scalar.js",
    initUrl: "/docs/init.js",
    sameOriginServer: true,
    changelogUrl: "/docs/changelog",
    feedUrl: "/docs/changelog.atom",
  });
  const changelogLinks = {
    title,
    pageUrl: "/docs/changelog",
    feedUrl: "/docs/changelog.atom",
    referenceUrl: "/docs",
  };
  const noStore = { "Cache-Control": "no-cache" };
  router.get("/openapi.json", (_req, res) => {
    res.set({ ...noStore, "Content-Type": "application/json; charset=utf-8" });
    res.send(fs.readFileSync(DOCUMENT_JSON));
  });
  router.get("/openapi.yaml", (_req, res) => {
    res.set({ ...noStore, "Content-Type": "application/yaml; charset=utf-8" });
    res.send(fs.readFileSync(DOCUMENT_YAML));
  });
  router.get(["/docs", "/docs/"], (_req, res) => {
    res.set({ ...noStore, "Content-Type": "text/html; charset=utf-8", "Content-Security-Policy": REFERENCE_CSP });
    res.send(page);
  });
  router.get("/docs/changelog", (_req, res) => {
    res.set({ ...noStore, "Content-Type": "text/html; charset=utf-8", "Content-Security-Policy": REFERENCE_CSP });
    res.send(changelogDocuments(changelogLinks).page);
  });
  router.get("/docs/changelog.atom", (_req, res) => {
    res.set({ ...noStore, "Content-Type": "application/atom+xml; charset=utf-8" });
    res.send(changelogDocuments(changelogLinks).feed);
  });
  router.get("/docs/init.js", (_req, res) => {
    res.set({ ...noStore, "Content-Type": "text/javascript; charset=utf-8" });
    res.send(REFERENCE_INIT_SCRIPT);
  });
  router.get("/docs/scalar.js", (_req, res, next) => {
    res.set({ "Cache-Control": "public, max-age=3600", "Content-Type": "text/javascript; charset=utf-8" });
    res.sendFile(REFERENCE_SCRIPT.pathname, (error) => (error ? next(error) : undefined));
  });
  return router;
}
