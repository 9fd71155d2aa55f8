// The README's settings table is the one server/config.ts declares (npm run settings:readme rewrites it).
import fs from "node:fs";
import t from "tap";
import { README, readmeWithTable } from "../scripts/settings-table.ts";

t.test("the README lists every setting with its default and meaning, as server/config.ts declares them", async (t) => {
  const readme = fs.readFileSync(README, "utf8");
  t.equal(readme, readmeWithTable(readme), "run `npm run settings:readme` after changing a setting");
});

t.test("the README shows both set-up commands", async (t) => {
  const readme = fs.readFileSync(README, "utf8");
  t.match(readme, /npm ci && npm start/);
  t.match(readme, /npm ci && npm test/);
});
