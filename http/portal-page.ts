// Serves the webhook portal page (built by `npm run generate` into generated/portal/) at /portal, with
// a strict Content-Security-Policy: scripts, styles and API calls from this origin only, no inline
// script, and the embedders allowed by PORTAL_FRAME_ANCESTORS.
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { Request, Response, Router } from "express";
import express from "express";

const PORTAL_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../generated/portal");

const FILES: Record<string, { file: string; type: string; cache: string }> = {
  "/portal": { file: "index.html", type: "text/html; charset=utf-8", cache: "no-store" },
  "/portal/portal.js": { file: "portal.js", type: "text/javascript; charset=utf-8", cache: "no-cache" },
  "/portal/portal.css": { file: "portal.css", type: "text/css; charset=utf-8", cache: "no-cache" },
};

export function portalContentSecurityPolicy(frameAncestors: string): string {
  return [
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self'",
    "connect-src 'self'",
    "img-src 'self'",
    "base-uri 'none'",
    "form-action 'none'",
    `frame-ancestors ${frameAncestors}`,
  ].join("; ");
}

/** GET and HEAD of /portal and its two assets; any other path falls through. */
export function portalPage(frameAncestors: string): Router {
  const contents = new Map(
    Object.entries(FILES).map(([route, spec]) => [
      route,
      { ...spec, body: fs.readFileSync(path.join(PORTAL_DIR, spec.file)) },
    ]),
  );
  const policy = portalContentSecurityPolicy(frameAncestors);
  const router = express.Router({ strict: true, caseSensitive: true });
  for (const [route, asset] of contents) {
    router.get(route, (_req: Request, res: Response) => {
      res.setHeader("Content-Type", asset.type);
      res.setHeader("Cache-Control", asset.cache);
      res.setHeader("Content-Security-Policy", policy);
      res.setHeader("X-Content-Type-Options", "nosniff");
      res.setHeader("Referrer-Policy", "no-referrer");
      res.setHeader("Cross-Origin-Resource-Policy", "same-origin");
      // X-Frame-Options cannot name origins; frame-ancestors decides, and DENY backs up 'none' for old browsers.
      if (frameAncestors === "'none'") res.setHeader("X-Frame-Options", "DENY");
      else res.removeHeader("X-Frame-Options");
      res.status(200).send(asset.body);
    });
  }
  return router;
}
