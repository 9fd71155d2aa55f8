// The service's TypeScript sources stripped ahead of time (scripts/strip-types.ts) and loaded from there
// (app/load-stripped.mjs), in a checkout of its own made in a temporary folder: the copies are written
// and pruned, a process started with the loader runs them without ever loading Node's type stripper
// (internal/deps/amaro), and a source edited after the strip runs as edited (the copies are named by the
// source's content, so none is ever stale).
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import t from "tap";
import { tempDir } from "../helpers/temp-dir.ts";

const ROOT = path.join(import.meta.dirname, "..", "..");

/** A checkout holding the loader and two modules of the service, one importing the other. */
function checkout(t: Parameters<typeof tempDir>[0]): string {
  const root = tempDir(t, "integrator-stripped-");
  fs.mkdirSync(path.join(root, "app"));
  fs.mkdirSync(path.join(root, "server"));
  for (const file of ["load-stripped.mjs", "stripped-sources.mjs"])
    fs.copyFileSync(path.join(ROOT, "app", file), path.join(root, "app", file));
  fs.writeFileSync(
    path.join(root, "server", "greeting.ts"),
    "export interface Greeting { text: string }\nexport const greeting = (name: string): Greeting => ({ text: `hello ${name}` });\n",
  );
  fs.writeFileSync(
    path.join(root, "app", "main.ts"),
    [
      'import { greeting, type Greeting } from "../server/greeting.ts";',
      "const said: Greeting = greeting(process.argv[2] as string);",
      'const loaded = (globalThis as Record<symbol, unknown>)[Symbol.for("integrator.typescript-sources")];',
      'const stripper = process.moduleLoadList.some((name: string) => name.includes("internal/deps/amaro"));',
      "console.log(JSON.stringify({ said: said.text, loaded, stripper }));",
      "",
    ].join("\n"),
  );
  return root;
}

function strip(root: string): { status: number | null; stderr: string } {
  return spawnSync(
    process.execPath,
    ["--disable-warning=ExperimentalWarning", path.join(ROOT, "scripts", "strip-types.ts"), root],
    {
      encoding: "utf8",
    },
  );
}

function run(root: string, withLoader = true): { said: string; loaded?: Record<string, number>; stripper: boolean } {
  const result = spawnSync(
    process.execPath,
    [
      ...(withLoader ? ["--import", path.join(root, "app", "load-stripped.mjs")] : []),
      path.join(root, "app", "main.ts"),
      "you",
    ],
    { encoding: "utf8", env: { PATH: process.env.PATH ?? "" } },
  );
  if (result.status !== 0) throw new Error(`the process exited ${result.status}: ${result.stderr}`);
  return JSON.parse(result.stdout) as { said: string; loaded?: Record<string, number>; stripper: boolean };
}

const copies = (root: string) =>
  fs.readdirSync(path.join(root, "node_modules", ".cache", "integrator-api", "stripped")).sort();

t.test("stripped ahead, the modules load from the copies and the type stripper never loads", async (t) => {
  const root = checkout(t);
  const before = run(root, false);
  t.equal(before.stripper, true, "without the loader Node strips them (else this proves nothing)");
  t.equal(before.said, "hello you");

  const first = strip(root);
  t.equal(first.status, 0, first.stderr);
  t.equal(first.stderr, "", "quiet when it succeeds");
  t.equal(copies(root).length, 2, "a copy of each source");
  t.match(copies(root)[0], /^[0-9a-f]{64}\.js$/, "named by the source's SHA-256");

  const after = run(root);
  t.same(after, { said: "hello you", loaded: { prestripped: 2, stripped_at_load: 0 }, stripper: false });
});

t.test("a source edited after the strip runs as edited, and the next strip replaces its copy", async (t) => {
  const root = checkout(t);
  t.equal(strip(root).status, 0);
  const before = copies(root);
  const greetingFile = path.join(root, "server", "greeting.ts");
  fs.writeFileSync(greetingFile, fs.readFileSync(greetingFile, "utf8").replace("hello", "goodbye"));

  const edited = run(root);
  t.equal(edited.said, "goodbye you", "the edit, not the stale copy");
  t.same(edited.loaded, { prestripped: 1, stripped_at_load: 1 }, "the edited source was stripped at load");
  t.equal(edited.stripper, true);

  t.equal(strip(root).status, 0);
  const after = copies(root);
  t.equal(after.length, 2, "the old copy removed, the new one written");
  t.equal(after.filter((name) => before.includes(name)).length, 1, "the unchanged source's copy kept");
  t.same(run(root), { said: "goodbye you", loaded: { prestripped: 2, stripped_at_load: 0 }, stripper: false });
});

t.test("a source Node cannot strip stops the strip with its name; a folder it cannot write does not", async (t) => {
  const root = checkout(t);
  fs.writeFileSync(path.join(root, "server", "enum.ts"), "export enum Colour { Red }\n");
  const refused = strip(root);
  t.equal(refused.status, 1);
  t.match(refused.stderr, /^strip-types: server\/enum\.ts: /, "names the source");
  fs.rmSync(path.join(root, "server", "enum.ts"));

  const cache = path.join(root, "node_modules", ".cache");
  fs.rmSync(cache, { recursive: true });
  fs.mkdirSync(cache, { recursive: true });
  fs.writeFileSync(path.join(cache, "integrator-api"), "a file where the folder would be");
  const blocked = strip(root);
  t.equal(blocked.status, 0, "the service can still start");
  t.match(
    blocked.stderr,
    /^strip-types: \S+ cannot be written \(.+\); the service strips its sources as it loads them\n$/,
  );
  t.same(run(root).loaded, { prestripped: 0, stripped_at_load: 2 }, "and strips at load");
});
