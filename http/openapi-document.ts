// The contract as the server loads it: the bundled JSON that `npm run generate` writes from openapi/openapi.yaml.
import fs from "node:fs";
import { fileURLToPath } from "node:url";
import type { OpenAPIV3_1 } from "openapi-types";

/** The file itself, for express-openapi-validator, which reads the document on its own. */
export const documentPath = fileURLToPath(new URL("../generated/openapi.json", import.meta.url));

let cached: string | undefined;

/** A fresh copy each call, so that no caller sees what another one changed. */
export function loadDocument(): OpenAPIV3_1.Document {
  cached ??= fs.readFileSync(documentPath, "utf8");
  return JSON.parse(cached) as OpenAPIV3_1.Document;
}

/** One segment of a JSON pointer (RFC 6901) as the key it names: "~1" is "/", "~0" is "~". */
export function decodePointerSegment(segment: string): string {
  return segment.replace(/~1/g, "/").replace(/~0/g, "~");
}

/** Follows one local "#/components/..." $ref (and chains of them); anything else is returned as it is. */
export function resolveRef(document: OpenAPIV3_1.Document, value: unknown): unknown {
  let current = value;
  for (let depth = 0; depth < 10; depth++) {
    if (!current || typeof current !== "object" || typeof (current as { $ref?: unknown }).$ref !== "string")
      return current;
    const ref = (current as { $ref: string }).$ref;
    if (!ref.startsWith("#/")) return current;
    current = ref
      .slice(2)
      .split("/")
      .map(decodePointerSegment)
      .reduce<unknown>(
        (node, key) => (node && typeof node === "object" ? (node as Record<string, unknown>)[key] : undefined),
        document,
      );
  }
  return current;
}
