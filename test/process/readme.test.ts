// The README's settings table is the one server/config.ts declares (npm run settings:readme rewrites it).
import fs from "node:fs";
import t from "tap";
import { README, readmeWithTable } from "../../scripts/settings-table.ts";

t.test("the README lists every setting with its default and meaning, as server/config.ts declares them", async (t) => {
  const readme = fs.readFileSync(README, "utf8");
  t.equal(readme, readmeWithTable(readme), "run `npm run settings:readme` after changing a setting");
});

t.test("the README shows both set-up commands", async (t) => {
  const readme = fs.readFileSync(README, "utf8");
  t.match(readme, /npm ci && npm start/);
  t.match(readme, /npm ci && npm test/);
});

t.test("the README states the Node version engines declares, and no other", async (t) => {
  const readme = fs.readFileSync(README, "utf8");
  const pkg = JSON.parse(fs.readFileSync(new URL("../../package.json", import.meta.url), "utf8"));
  const minimum = /^>=(\d+\.\d+)$/.exec(pkg.engines.node)?.[1];
  t.ok(minimum, "engines.node is >=X.Y");
  t.match(readme, new RegExp(`Node\\.js ${minimum?.replace(".", "\\.")} or newer`));
  const stated = [...readme.matchAll(/Node(?:\.js)? (\d+)(?:\.\d+)? or newer/g)].map((m) => m[0]);
  t.same(stated, [`Node.js ${minimum} or newer`], "one statement of the minimum");
});

t.test("the README shows the default MIME list intake accepts", async (t) => {
  const { DEFAULT_MIME_TYPES } = await import("../../server/config.ts");
  const readme = fs.readFileSync(README, "utf8");
  for (const type of DEFAULT_MIME_TYPES) t.match(readme, `\`${type}\``, type);
});
