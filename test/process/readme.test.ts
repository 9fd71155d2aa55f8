// The README: what it is, the two set-up commands and the quickstart (test/process/quickstart.test.ts runs it).
// The settings table and the MIME list moved with their content (test/process/documents.test.ts).
import fs from "node:fs";
import t from "tap";

const README = new URL("../../README.md", import.meta.url);

t.test("the README installs once: one npm ci, then npm start and npm test", async (t) => {
  const readme = fs.readFileSync(README, "utf8");
  const commands = [...readme.matchAll(/```sh\n([\s\S]*?)```/g)].flatMap((m) => (m[1] ?? "").split("\n"));
  const installs = commands.filter((line) => /\bnpm (ci|install|i)\b/.test(line));
  t.equal(installs.length, 1, `one install in all the README's commands (${installs.join(" | ")})`);
  t.match(installs[0], /^npm ci\b/, "npm ci");
  t.ok(
    commands.some((line) => /^npm start\b/.test(line)),
    "npm start",
  );
  t.ok(
    commands.some((line) => /^npm test\b/.test(line)),
    "npm test",
  );
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
