// The service's version (package.json), as /v1/health, the start-up log and the spans' service.version tell it.
import fs from "node:fs";

export const VERSION: string = (
  JSON.parse(fs.readFileSync(new URL("../package.json", import.meta.url), "utf8")) as { version: string }
).version;
