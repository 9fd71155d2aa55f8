// compose.yaml runs NODE_ENV=production, whose start refuses a missing ENCRYPTION_KEY or PUBLIC_BASE_URL:
// a default in compose.yaml would defeat that check, and a default database password would ship a known
// one. Each of these must be set by whoever starts it (compose's `${NAME:?message}`), never defaulted.
import fs from "node:fs";
import path from "node:path";
import t from "tap";
import { parse } from "yaml";

const ROOT = path.resolve(import.meta.dirname, "../..");
const text = fs.readFileSync(path.join(ROOT, "compose.yaml"), "utf8");

t.test("compose.yaml requires ENCRYPTION_KEY, PUBLIC_BASE_URL and POSTGRES_PASSWORD: no defaults", async (t) => {
  for (const name of ["ENCRYPTION_KEY", "PUBLIC_BASE_URL", "POSTGRES_PASSWORD"]) {
    const uses = [...text.matchAll(new RegExp(`\\$\\{${name}([^}]*)\\}`, "g"))].map((match) => match[1] ?? "");
    t.ok(uses.length > 0, `${name} is used`);
    for (const use of uses) t.match(use, /^:\?\S/, `\${${name}${use}} fails when ${name} is unset or empty`);
  }
  const compose = parse(text) as {
    services: Record<string, { environment?: Record<string, string> }>;
    "x-integrator": { environment: Record<string, string> };
  };
  t.equal(compose["x-integrator"].environment.NODE_ENV, "production");
  t.notMatch(compose.services.postgres?.environment?.POSTGRES_PASSWORD ?? "", /integrator/, "no known password");
});
