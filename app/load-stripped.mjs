// @ts-check
// Loaded with --import before app/main.ts (npm start, start:api, start:worker and the container image): the
// service's TypeScript modules load from the JavaScript scripts/strip-types.ts wrote ahead of time
// (app/stripped-sources.mjs), so the running process never loads Node's own type stripper, a WebAssembly
// build of swc that stays resident once loaded: about 28 MiB of the API's resident set before its first
// request (docs/operating.md, "Memory").
//
// A source without a copy (edited since the strip, or outside the folders stripped) loads through Node's
// own stripping as without this module: correct, only bigger. How many modules loaded each way is on
// globalThis under Symbol.for("integrator.typescript-sources"); app/main.ts reports it in its start line.
import { readFileSync } from "node:fs";
import { registerHooks } from "node:module";
import { fileURLToPath } from "node:url";
import { strippedPath } from "./stripped-sources.mjs";

const loaded = { prestripped: 0, stripped_at_load: 0 };
Object.defineProperty(globalThis, Symbol.for("integrator.typescript-sources"), { value: loaded });

registerHooks({
  load(url, context, nextLoad) {
    if (url.startsWith("file:") && url.endsWith(".ts") && !url.includes("/node_modules/")) {
      try {
        const source = readFileSync(strippedPath(readFileSync(fileURLToPath(url))), "utf8");
        loaded.prestripped++;
        return { format: "module", source, shortCircuit: true };
      } catch {
        loaded.stripped_at_load++;
      }
    }
    return nextLoad(url, context);
  },
});
