// The API description and its reference page: GET /openapi.json (the bundled copy), /openapi.yaml (the
// hand-written source, self-contained) and /docs, a Scalar page whose script is served from the installed
// @scalar/api-reference package (no CDN: it works offline). Served when config.serveApiDocs (API_DOCS; by
// default everywhere but production). `npm run docs` writes the same page as a static folder.
import fs from "node:fs";
import express, { type Router } from "express";

const DOCUMENT_JSON = new URL("../generated/openapi.json", import.meta.url);
const DOCUMENT_YAML = new URL("../openapi/openapi.yaml", import.meta.url);
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
}

export function referencePageHtml(title: string, links: ReferencePageLinks): string {
  const escape = (value: string) => value.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
  return `<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8" />
    <meta name="viewport" content="width=device-width, initial-scale=1" />
    <title>${escape(title)} reference</title>
  </head>
  <body>
    <div id="api-reference" data-document-url="${escape(links.documentUrl)}" data-same-origin-server="${String(links.sameOriginServer)}"></div>
    <script src="${escape(links.scriptUrl)}"></script>
    <script src="${escape(links.initUrl)}"></script>
  </body>
</html>
`;
}

/** Starts Scalar on #api-reference; a file of its own so that the page needs no inline script. */
export const REFERENCE_INIT_SCRIPT = `(function () {
  var element = document.getElementById("api-reference");
  var configuration = {
    url: element.getAttribute("data-document-url"),
    withDefaultFonts: false,
    defaultOpenAllTags: true,
    telemetry: false,
    showDeveloperTools: "never",
    agent: { disabled: true },
    hideDownloadButton: false,
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

/** The routes; mounted by the app only when the description is to be served. */
export function apiDocsRouter(): Router {
  const router = express.Router();
  const page = referencePageHtml(documentTitle(), {
    documentUrl: "/openapi.json",
    scriptUrl: "/docs/scalar.js",
    initUrl: "/docs/init.js",
    sameOriginServer: true,
  });
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
