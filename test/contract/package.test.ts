// The published contract package: built and packed as `npm run contract:package -- --pack DIR` does, it
// stays small, depends on openapi-fetch and standardwebhooks alone, and a strict TypeScript consumer of the installed tarball
// compiles and runs.
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import t from "tap";
import { tempDir } from "../helpers/temp-dir.ts";
import { buildContractPackage, PACKAGE_DIR, packContractPackage, ROOT } from "../../scripts/contract-package.ts";

const MAX_PACKED_BYTES = 200 * 1024;

t.test("the contract package", async (t) => {
  const work = tempDir(t, "contract-package-");
  buildContractPackage();
  const tarball = packContractPackage(work);

  t.test("npm pack of it stays under 200 KB", async (t) => {
    const size = fs.statSync(tarball).size;
    t.ok(size < MAX_PACKED_BYTES, `packed size ${size} bytes`);
  });

  const consumer = path.join(work, "consumer");
  fs.mkdirSync(consumer);
  fs.writeFileSync(
    path.join(consumer, "package.json"),
    JSON.stringify({ name: "consumer", private: true, type: "module" }),
  );
  execFileSync("npm", ["install", "--prefer-offline", "--no-audit", "--no-fund", "--ignore-scripts", tarball], {
    cwd: consumer,
    stdio: ["ignore", "pipe", "pipe"],
  });
  const installed = path.join(consumer, "node_modules/integrator-api-contract");

  t.test("it depends on openapi-fetch and standardwebhooks alone, and carries no server code", async (t) => {
    const manifest = JSON.parse(fs.readFileSync(path.join(installed, "package.json"), "utf8"));
    t.same(Object.keys(manifest.dependencies ?? {}).sort(), ["openapi-fetch", "standardwebhooks"]);
    t.same(manifest.peerDependencies ?? {}, {});
    t.same(fs.readdirSync(path.join(installed, "dist")).sort(), [
      "index.d.ts",
      "index.js",
      "openapi.d.ts",
      "openapi.js",
      "openapi.json",
      "openapi.yaml",
      "retries.d.ts",
      "retries.js",
      "token-provider.d.ts",
      "token-provider.js",
      "webhooks.d.ts",
      "webhooks.js",
    ]);
  });

  t.test("it ships the bundled document, byte for byte, in JSON and YAML", async (t) => {
    t.equal(
      fs.readFileSync(path.join(installed, "dist/openapi.json"), "utf8"),
      fs.readFileSync(path.join(ROOT, "generated/openapi.json"), "utf8"),
    );
    t.equal(
      fs.readFileSync(path.join(installed, "dist/openapi.yaml"), "utf8"),
      fs.readFileSync(path.join(ROOT, "openapi/openapi.yaml"), "utf8"),
    );
  });

  t.test("a strict TypeScript example consuming the installed tarball compiles", async (t) => {
    for (const file of ["example.ts", "tsconfig.json"])
      fs.copyFileSync(path.join(PACKAGE_DIR, "example", file), path.join(consumer, file));
    const tsc = path.join(ROOT, "node_modules/typescript/bin/tsc");
    const output = (() => {
      try {
        return execFileSync(process.execPath, [tsc, "-p", consumer], { encoding: "utf8", stdio: "pipe" });
      } catch (error) {
        return String((error as { stdout?: string }).stdout ?? error);
      }
    })();
    t.equal(output, "", "tsc reports nothing");
  });

  t.test("a type error in the consumer is caught (the compile check can fail)", async (t) => {
    fs.writeFileSync(
      path.join(consumer, "broken.ts"),
      `import { createIntegratorClient } from "integrator-api-contract";\n` +
        `const api = createIntegratorClient({ baseUrl: "http://localhost:8080" });\n` +
        `export const call = api.POST("/v1/intake/submit", { body: { filename: "a.pdf", file_size: "big", mime_type: "application/pdf" } });\n`,
    );
    const tsc = path.join(ROOT, "node_modules/typescript/bin/tsc");
    const args = [
      tsc,
      "--strict",
      "--noEmit",
      "--module",
      "nodenext",
      "--moduleResolution",
      "nodenext",
      "--target",
      "es2022",
      "--lib",
      "es2022,dom",
      "--types",
      "",
      path.join(consumer, "broken.ts"),
    ];
    t.throws(() => execFileSync(process.execPath, args, { stdio: "pipe" }), "file_size as a string does not compile");
  });

  t.test("the installed client runs: it builds requests with the bearer token and Idempotency-Key", async (t) => {
    const script = `
      import { createIntegratorClient, withIdempotencyKey } from "integrator-api-contract";
      import document from "integrator-api-contract/openapi.json" with { type: "json" };
      let seen;
      const api = createIntegratorClient({ baseUrl: "http://integrator.test", token: "tok-1",
        fetch: async (request) => { seen = request; return new Response(JSON.stringify({ ok: true }), { status: 201, headers: { "Content-Type": "application/json" } }); } });
      const { data } = await api.POST("/v1/intake/submit", { body: { filename: "a.pdf", file_size: 1, mime_type: "application/pdf" }, ...withIdempotencyKey("k-1") });
      console.log(JSON.stringify({ url: seen.url, auth: seen.headers.get("authorization"), key: seen.headers.get("idempotency-key"), data, version: document.info.version }));
    `;
    fs.writeFileSync(path.join(consumer, "run.mjs"), script);
    const printed = JSON.parse(execFileSync(process.execPath, [path.join(consumer, "run.mjs")], { encoding: "utf8" }));
    const manifest = JSON.parse(fs.readFileSync(path.join(PACKAGE_DIR, "package.json"), "utf8"));
    t.same(printed, {
      url: "http://integrator.test/v1/intake/submit",
      auth: "Bearer tok-1",
      key: "k-1",
      data: { ok: true },
      version: manifest.version,
    });
  });
});
