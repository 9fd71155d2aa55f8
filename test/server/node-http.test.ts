// Every module of the service loads without Node's bundled fetch implementation (undici), which an ESM
// import of node:http would load for its WebSocket, CloseEvent and MessageEvent getters (server/node-http.ts).
import { spawnSync } from "node:child_process";
import path from "node:path";
import { pathToFileURL } from "node:url";
import t from "tap";

const ROOT = path.join(import.meta.dirname, "..", "..");

/** Whether undici is loaded in a fresh process once these statements have run. */
function undiciLoadedAfter(statements: string): boolean {
  const script = `${statements}
    process.stdout.write(String(process.moduleLoadList.some((name) => name.includes("undici"))));
    process.exit(0);`;
  const { stdout, stderr, status } = spawnSync(
    process.execPath,
    ["--disable-warning=ExperimentalWarning", "--input-type=module", "-e", script],
    { encoding: "utf8", env: { PATH: process.env.PATH ?? "" } },
  );
  if (status !== 0) throw new Error(`the importing process failed (${status}): ${stderr}`);
  return stdout === "true";
}

const imports = (...modules: string[]) =>
  modules.map((module) => `await import(${JSON.stringify(pathToFileURL(path.join(ROOT, module)).href)});`).join("\n");

t.test("the service's modules load without undici", async (t) => {
  t.equal(undiciLoadedAfter(`import "node:http";`), true, "an ESM import of node:http loads it (so this can fail)");
  t.equal(
    undiciLoadedAfter(imports("app/lifecycle.ts", "server/metrics.ts", "worker/sender.ts", "handlers/index.ts")),
    false,
    "the process roles, the metrics server, the webhook sender and every handler do not",
  );
});
