// The headers every response of the service conventionally carries, on the API port (http/security-headers.ts
// sets them first in the pipeline, errors, 404s and 429s included) and on the metrics port:
// - X-Content-Type-Options: nosniff: a browser never guesses another type than the one declared;
// - Content-Security-Policy: default-src 'none'; frame-ancestors 'none': an answer loads nothing and is
//   never framed; X-Frame-Options: DENY says the same to older browsers;
// - Referrer-Policy: no-referrer: links followed from a response leak no URL (ids, query strings);
// - Cache-Control: no-store: answers are per caller; an operation that may be cached (the JWKS) sets its own.
export const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  "X-Content-Type-Options": "nosniff",
  "Content-Security-Policy": "default-src 'none'; frame-ancestors 'none'",
  "X-Frame-Options": "DENY",
  "Referrer-Policy": "no-referrer",
  "Cache-Control": "no-store",
};
