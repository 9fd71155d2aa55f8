// The README: what it is, the two set-up commands and the quickstart (test/process/quickstart.test.ts runs it).
// The settings table and the MIME list moved with their content (test/process/documents.test.ts).
import fs from "node:fs";
import t from "tap";

const README = new URL("../../README.md", import.meta.url);

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
