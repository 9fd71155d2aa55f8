// The published contract package: built and packed as `node scripts/contract-package.ts --pack DIR` does, it
// stays small and is the size docs/integrating.md states, depends on openapi-fetch and standardwebhooks alone,
// a strict TypeScript consumer of the installed tarball compiles (event kinds checked by the compiler, type
// errors naming the package's named types), and the installed SDK works against the running service: a token
// from the provider, an intake call whose retry is replayed, a 429 waited out for Retry-After, a real
// delivery verified. Its `engines` says what it runs on: an engine-strict install on the oldest Node it
// admits succeeds, and the SDK's calls run on that Node as on this one.
import { execFile, execFileSync, spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { promisify } from "node:util";
import t from "tap";
import { tempDir } from "../helpers/temp-dir.ts";
import { runAdminCommand } from "../helpers/admin-cli.ts";
import { createTestTenant, startReplica, tokenRequest } from "../helpers/server.ts";
import { startWebhookRig, testCa } from "../helpers/webhooks.ts";
import { waitFor } from "../helpers/wait.ts";
import { buildContractPackage, PACKAGE_DIR, packContractPackage, ROOT } from "../../scripts/contract-package.ts";

// Builds, packs, installs and compiles the package, and waits out a minute's rate limit: past tap's
// three minutes on a busy machine.
t.setTimeout(600_000);

const MAX_PACKED_BYTES = 200 * 1024;
const TSC = path.join(ROOT, "node_modules/typescript/bin/tsc");

/** The Node binaries on PATH by major version, the first of each (`npm test` puts the pinned Node 24 first). */
function nodesOnPath(): Map<number, { bin: string; version: string }> {
  const found = new Map<number, { bin: string; version: string }>();
  for (const dir of (process.env.PATH ?? "").split(path.delimiter)) {
    const bin = path.join(dir, "node");
    if (!dir || !fs.existsSync(bin)) continue;
    const version = execFileSync(bin, ["--version"], { encoding: "utf8" }).trim();
    const major = Number(/^v(\d+)\./.exec(version)?.[1]);
    if (!found.has(major)) found.set(major, { bin, version });
  }
  return found;
}

/** tsc's report on a project of the consumer: "" when it compiles. */
function compile(project: string): string {
  try {
    return execFileSync(process.execPath, [TSC, "-p", project], { encoding: "utf8", stdio: "pipe" });
  } catch (error) {
    return String((error as { stdout?: string }).stdout ?? error);
  }
}

t.test("the contract package", async (t) => {
  const work = tempDir(t, "contract-package-");
  const consumer = path.join(work, "consumer");

  // The running service. The slowest check is a 429 waited out for Retry-After: another API process of the
  // deployment allows two requests a minute per principal; an API client makes its first request now, so
  // that the minute it later waits for runs while the package is built and the other checks run.
  const rig = await startWebhookRig(t, testCa(t));
  const limited = await startReplica(t, rig.server, { RATE_LIMIT_PER_MINUTE: "2" });
  const run = async (script: string, env: Record<string, string>, node = process.execPath) => {
    const { stdout } = await promisify(execFile)(node, [path.join(consumer, script)], {
      cwd: consumer,
      env: { ...process.env, ...env },
      encoding: "utf8",
    });
    return JSON.parse(stdout);
  };
  /** An API client of a tenant, made with the command an operator runs (the CLI's own run: test/contract/listen-command). */
  const apiClient = async (tenantId: string) => {
    const { client_id, client_secret } = (await runAdminCommand(rig.server.services, "client:create", {
      tenant: tenantId,
      roles: "client_admin",
    })) as { client_id: string; client_secret: string };
    t.ok(client_id && client_secret, "client:create");
    return { CLIENT_ID: client_id, CLIENT_SECRET: client_secret };
  };
  const submissionsOf = async (tenantId: string) =>
    Number(
      (
        await rig.server.services
          .db("integrator.intake_submissions")
          .where({ tenant_id: tenantId })
          .count<{ count: string }[]>("* as count")
      )[0]?.count,
    );
  const limitedTenant = await createTestTenant(limited.services);
  const limitedClient = await apiClient(limitedTenant.tenantId);
  const opened = await tokenRequest(limited, {
    grant_type: "client_credentials",
    client_id: limitedClient.CLIENT_ID,
    client_secret: limitedClient.CLIENT_SECRET,
  });
  const { access_token } = (await opened.json()) as { access_token: string };
  t.equal((await limited.request("/v1/me", { token: access_token })).status, 200, "the first request of its minute");

  buildContractPackage();
  const tarball = packContractPackage(work);

  // An empty project that installs the tarball, as an integrator's would.
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
  const consumerConfig = JSON.parse(fs.readFileSync(path.join(PACKAGE_DIR, "example/tsconfig.json"), "utf8"));
  /** A tsconfig of the consumer's strict settings for `files`; returns its path. */
  const project = (name: string, files: string[]) => {
    const file = path.join(consumer, `tsconfig.${name}.json`);
    fs.writeFileSync(file, JSON.stringify({ ...consumerConfig, files }));
    return file;
  };

  // The API client's second request of the minute, then a 429 (its Retry-After noted), then an intake call.
  fs.writeFileSync(
    path.join(consumer, "rate-limited.mjs"),
    `import { createIntegratorClient, createTokenProvider } from "integrator-api-contract";
    const { BASE_URL: baseUrl, CLIENT_ID: clientId, CLIENT_SECRET: clientSecret } = process.env;
    const token = createTokenProvider({ baseUrl, clientId, clientSecret });
    const statuses = [];
    let retryAfter;
    while (retryAfter === undefined && statuses.length < 5) {
      const answer = await fetch(baseUrl + "/v1/me", { headers: { Authorization: "Bearer " + (await token()) } });
      statuses.push(answer.status);
      if (answer.status === 429) retryAfter = Number(answer.headers.get("retry-after"));
    }
    const notices = [];
    const api = createIntegratorClient({ baseUrl, token, retry: { maxWaitSeconds: 90, onRetry: (notice) => notices.push(notice) } });
    const started = Date.now();
    const submitted = await api.POST("/v1/intake/submit", { body: { filename: "later.pdf", file_size: 1, mime_type: "application/pdf" } });
    console.log(JSON.stringify({ statuses, retryAfter, notices, elapsedMs: Date.now() - started, status: submitted.response.status }));
    `,
  );
  const rateLimited = run("rate-limited.mjs", { BASE_URL: limited.baseUrl, ...limitedClient });
  rateLimited.catch(() => {}); // awaited, and its failure reported, by the test below

  t.test("npm pack of it stays under 200 KB", async (t) => {
    const size = fs.statSync(tarball).size;
    t.ok(size < MAX_PACKED_BYTES, `packed size ${size} bytes`);
  });

  t.test("docs/integrating.md states the size npm pack makes it, to within a tenth", async (t) => {
    const kB = fs.statSync(tarball).size / 1000;
    const text = fs.readFileSync(path.join(ROOT, "docs/integrating.md"), "utf8");
    const stated = Number(/builds and packs it, about (\d+) kB/.exec(text)?.[1]);
    t.ok(
      Math.abs(stated - kB) <= kB / 10,
      `it says about ${stated} kB, npm pack made ${kB.toFixed(1)} kB: say about ${Math.round(kB / 10) * 10} kB`,
    );
  });

  // `engines.node` is a lower bound (">=20", ">=20.17"), and a Node of its major is on PATH (CI's is 20).
  const manifest = JSON.parse(fs.readFileSync(path.join(PACKAGE_DIR, "package.json"), "utf8"));
  const oldestMajor = Number(/^>=(\d+)(?:\.\d+){0,2}$/.exec(String(manifest.engines?.node))?.[1]);
  const nodes = nodesOnPath();
  const oldest = nodes.get(oldestMajor);
  /** Where the installed SDK's scripts run: this Node, and the oldest one engines.node admits. */
  const runtimes = [
    { name: `on Node ${process.version}`, node: process.execPath },
    ...(oldest && oldest.bin !== process.execPath
      ? [{ name: `on Node ${oldest.version}, the oldest engines.node admits`, node: oldest.bin }]
      : []),
  ];

  t.test("engines.node admits the oldest Node it runs on: an engine-strict install there passes", async (t) => {
    t.match(manifest.engines?.node, /^>=\d+(?:\.\d+){0,2}$/, "engines.node is a lower bound");
    const onPath = [...nodes.values()].map((node) => `${node.version} (${node.bin})`).join(", ");
    t.ok(oldest, `a Node ${oldestMajor} on PATH to hold engines.node to; found ${onPath}`);
    if (!oldest) return;
    const oldestConsumer = path.join(work, "oldest-consumer");
    fs.mkdirSync(oldestConsumer);
    fs.writeFileSync(path.join(oldestConsumer, "package.json"), JSON.stringify({ name: "consumer", private: true }));
    // npm runs on the first node of PATH: the oldest, as on an integrator's machine that has only it.
    const installed = spawnSync(
      "npm",
      ["install", "--engine-strict", "--loglevel=warn", "--prefer-offline", "--no-audit", "--no-fund", tarball],
      {
        cwd: oldestConsumer,
        encoding: "utf8",
        env: { ...process.env, PATH: `${path.dirname(oldest.bin)}${path.delimiter}${process.env.PATH ?? ""}` },
      },
    );
    const output = `${installed.stdout}${installed.stderr}`;
    t.equal(installed.status, 0, `npm install --engine-strict on Node ${oldest.version}: ${output}`);
    t.notMatch(output, /EBADENGINE|Unsupported engine/, "and no engine warning");
  });

  t.test(
    "it depends on openapi-fetch and standardwebhooks alone, carries a licence, its command and no server code",
    async (t) => {
      const shipped = JSON.parse(fs.readFileSync(path.join(installed, "package.json"), "utf8"));
      t.same(Object.keys(shipped.dependencies ?? {}).sort(), ["openapi-fetch", "standardwebhooks"]);
      t.same(shipped.peerDependencies ?? {}, {});
      t.equal(shipped.license, "MIT");
      t.match(fs.readFileSync(path.join(installed, "LICENSE"), "utf8"), /^MIT License/);
      t.same(fs.readdirSync(path.join(installed, "dist")).sort(), [
        "cli",
        "index.d.ts",
        "index.js",
        "openapi.d.ts",
        "openapi.js",
        "openapi.json",
        "openapi.yaml",
        "retries.d.ts",
        "retries.js",
        "schemas.d.ts",
        "schemas.js",
        "token-provider.d.ts",
        "token-provider.js",
        "webhooks.d.ts",
        "webhooks.js",
      ]);
      t.same(
        shipped.bin,
        { "integrator-api-contract": "./dist/cli/main.js" },
        "its command (test/contract/listen-command.test.ts)",
      );
      t.same(fs.readdirSync(path.join(installed, "dist/cli")).sort(), [
        "credentials.js",
        "forward.js",
        "listen.js",
        "main.js",
      ]);
    },
  );

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

  // The consumer's files, those that must compile and those that must not, are checked by one tsc run (a run
  // costs seconds, most of it checking the libraries' declarations); each test reads the errors reported in
  // its own files (an error's first line names its file, the lines after it are indented).
  const compiling = ["example.ts", "events.ts", "readme.ts"];
  const failing = ["broken.ts", "unguarded.ts", "named.ts"];
  let errors: string[] | undefined;
  const reported = (which: (error: string) => boolean): string => {
    errors ??= compileConsumer();
    return errors.filter(which).join("\n");
  };
  const reportIn = (...files: string[]) => reported((error) => files.some((file) => error.includes(`${file}(`)));
  const readmeExample = () =>
    /```ts\n([\s\S]*?)```/.exec(fs.readFileSync(path.join(PACKAGE_DIR, "README.md"), "utf8"))?.[1] ?? "";
  function compileConsumer(): string[] {
    for (const file of fs.readdirSync(path.join(PACKAGE_DIR, "example")))
      fs.copyFileSync(path.join(PACKAGE_DIR, "example", file), path.join(consumer, file));
    // What a web framework hands a webhook endpoint, and Node's process, declared for the compiler.
    const preamble =
      "declare const process: { env: Record<string, string | undefined> };\n" +
      "declare const rawBody: string;\ndeclare const request: { headers: Headers };\n";
    fs.writeFileSync(path.join(consumer, "readme.ts"), preamble + readmeExample());
    fs.writeFileSync(
      path.join(consumer, "named.ts"),
      `import type { IntakeSubmission, WebhookSubscription } from "integrator-api-contract";\n` +
        `export const submission: IntakeSubmission = { id: "0192f0c1-5d2e-7f3a-8b4c-9d0e1f2a3b4c", ` +
        `tenant_id: "0192f0b1-2c3d-7e4f-8a5b-6c7d8e9f0a1b", external_reference: null, module: null, tier: null, ` +
        `item_count: 1, accepted_count: 1, failed_count: 0, status: "completed", created_by: "cli_1", ` +
        `created_at: "2026-11-24T09:00:00.000Z", acepted_count: 1 };\n` +
        `export const shown = (subscription: WebhookSubscription): string => subscription.secret;\n` +
        `export const partial: IntakeSubmission = { id: "0192f0c1-5d2e-7f3a-8b4c-9d0e1f2a3b4c" };\n`,
    );
    fs.writeFileSync(
      path.join(consumer, "broken.ts"),
      `import { createIntegratorClient } from "integrator-api-contract";\n` +
        `const api = createIntegratorClient({ baseUrl: "http://localhost:8080" });\n` +
        `export const call = api.POST("/v1/intake/submit", { body: { filename: "a.pdf", file_size: "big", mime_type: "application/pdf" } });\n`,
    );
    // events.ts without its @ts-expect-error lines: each line they guarded is an error.
    const events = fs.readFileSync(path.join(PACKAGE_DIR, "example/events.ts"), "utf8");
    fs.writeFileSync(path.join(consumer, "unguarded.ts"), events.replace(/^ *\/\/ @ts-expect-error.*\n/gm, ""));
    const report = compile(project("consumer", [...compiling, ...failing]));
    return report.split(/\n(?=\S)/).filter(Boolean);
  }

  t.test("strict TypeScript consumers of the installed tarball compile, the README's example too", async (t) => {
    t.ok(readmeExample().split("\n").filter(Boolean).length <= 12, "the README's example is about ten lines");
    t.equal(
      reported((error) => !failing.some((file) => error.includes(`${file}(`))),
      "",
      `tsc reports nothing but the errors of ${failing.join(", ")}, none about ${compiling.join(", ")}`,
    );
  });

  t.test("the compile check can fail: a wrong body, a misspelt event kind, another kind's data", async (t) => {
    const report = reportIn("broken.ts", "unguarded.ts");
    t.match(report, /broken\.ts\(3,\d+\): error TS2322/, "file_size as a string");
    t.match(report, /unguarded\.ts\(\d+,\d+\): error TS2367: .*"intake\.submited"/, "a misspelt kind in a comparison");
    t.match(
      report,
      /unguarded\.ts\(\d+,\d+\): error TS2678: .*"document\.statuschanged"/,
      "a misspelt kind in a switch",
    );
    t.match(report, /unguarded\.ts\(\d+,\d+\): error TS2322: Type 'unknown' is not assignable to type 'number'/);
    t.equal(report.match(/error TS/g)?.length, 4, "and nothing else");
  });

  t.test("a type error names the package's named type, not a page of its structure", async (t) => {
    const report = reportIn("named.ts");
    t.match(
      report,
      /named\.ts\(2,\d+\): error TS2561: Object literal may only specify known properties, but 'acepted_count' does not exist in type 'IntakeSubmission'\. Did you mean to write 'accepted_count'\?/,
      "a misspelt field",
    );
    t.match(
      report,
      /named\.ts\(3,\d+\): error TS2339: Property 'secret' does not exist on type 'WebhookSubscription'\./,
      "a field the type does not have",
    );
    t.match(
      report,
      /named\.ts\(4,\d+\): error TS2740: Type '\{ id: string; \}' is missing the following properties from type 'IntakeSubmission': tenant_id, /,
      "missing fields",
    );
    t.notMatch(report, /item_count: number/, "no structure printed");
    t.equal(report.match(/error TS/g)?.length, 3, "and nothing else");
  });

  t.test("the installed client builds requests with the bearer token and Idempotency-Key", async (t) => {
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
    for (const { name, node } of runtimes)
      t.same(
        JSON.parse(execFileSync(node, [path.join(consumer, "run.mjs")], { encoding: "utf8" })),
        {
          url: "http://integrator.test/v1/intake/submit",
          auth: "Bearer tok-1",
          key: "k-1",
          data: { ok: true },
          version: manifest.version,
        },
        name,
      );
  });

  t.test("the installed SDK against the running service", async (t) => {
    const { secret } = await rig.subscribe(rig.receiver.url("/sdk"), ["intake.submitted"]);
    const credentials = await apiClient(rig.tenant.tenantId);

    t.test("a token from the provider, and an intake call whose lost answer is retried and replayed", async (t) => {
      fs.writeFileSync(
        path.join(consumer, "intake.mjs"),
        `import { createIntegratorClient, createTokenProvider } from "integrator-api-contract";
        const { BASE_URL: baseUrl, CLIENT_ID: clientId, CLIENT_SECRET: clientSecret } = process.env;
        const token = createTokenProvider({ baseUrl, clientId, clientSecret });
        const sent = [];
        const api = createIntegratorClient({ baseUrl, token, fetch: async (request) => {
          const pathname = new URL(request.url).pathname;
          sent.push({ pathname, key: request.headers.get("idempotency-key") });
          const answer = await fetch(request);
          if (pathname !== "/v1/intake/submit" || sent.filter((s) => s.pathname === pathname).length > 1) return answer;
          // The service acts on the first submit, but its answer is lost on the way back.
          await answer.arrayBuffer();
          throw new TypeError("fetch failed");
        } });
        const me = await api.GET("/v1/me");
        const submitted = await api.POST("/v1/intake/submit", { body: { filename: "claim-4711.pdf", file_size: 482133, mime_type: "application/pdf" } });
        console.log(JSON.stringify({ subject: me.data.subject, status: submitted.response.status,
          replayed: submitted.response.headers.get("idempotent-replayed"), submissionId: submitted.data.id, sent }));
        `,
      );
      const submissionIds: string[] = [];
      for (const { name, node } of runtimes) {
        const before = await submissionsOf(rig.tenant.tenantId);
        const printed = await run("intake.mjs", { BASE_URL: rig.server.baseUrl, ...credentials }, node);
        t.equal(printed.subject, credentials.CLIENT_ID, `${name}: the provider's token is the API client's`);
        t.equal(printed.status, 201, name);
        t.equal(printed.replayed, "true", `${name}: the service replayed the first answer`);
        const submits = printed.sent.filter((call: { pathname: string }) => call.pathname === "/v1/intake/submit");
        t.equal(submits.length, 2, name);
        t.match(submits[0].key, /^[0-9a-f-]{36}$/, `${name}: the client made up an Idempotency-Key`);
        t.equal(submits[1].key, submits[0].key, `${name}: and sent it again with the retry`);
        t.equal(await submissionsOf(rig.tenant.tenantId), before + 1, `${name}: one submission`);
        submissionIds.push(printed.submissionId);
      }

      t.test("the service's delivery of it verifies with the secret as returned", async (t) => {
        const [submissionId] = submissionIds;
        const ofSubmission = (request: { rawBody: Buffer }) =>
          JSON.parse(request.rawBody.toString("utf8")).data?.submission_id === submissionId;
        const received = await waitFor(
          async () => rig.receiver.receivedAt("/sdk"),
          (requests) => requests.some(ofSubmission),
        );
        const delivery = received.find(ofSubmission);
        t.ok(delivery, "a delivery arrived");
        if (!delivery) return;
        fs.writeFileSync(path.join(consumer, "body.bin"), delivery.rawBody);
        fs.writeFileSync(path.join(consumer, "headers.json"), JSON.stringify(delivery.headers));
        fs.writeFileSync(
          path.join(consumer, "verify.mjs"),
          `import fs from "node:fs";
          import { verifyWebhook } from "integrator-api-contract";
          const body = fs.readFileSync("body.bin");
          const headers = JSON.parse(fs.readFileSync("headers.json", "utf8"));
          const event = verifyWebhook(body, headers, process.env.WEBHOOK_SECRET);
          const refusal = (verify) => { try { verify(); return "verified"; } catch (error) { return error.name; } };
          const tampered = refusal(() => verifyWebhook(Buffer.concat([body, Buffer.from(" ")]), headers, process.env.WEBHOOK_SECRET));
          const withBom = refusal(() => verifyWebhook(Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), body]), headers, process.env.WEBHOOK_SECRET));
          const asUint8Array = verifyWebhook(new Uint8Array(body), headers, process.env.WEBHOOK_SECRET).event;
          console.log(JSON.stringify({ event: event.event, submissionId: event.data.submission_id, tampered, withBom, asUint8Array }));
          `,
        );
        for (const { name, node } of runtimes)
          t.same(
            await run("verify.mjs", { WEBHOOK_SECRET: secret }, node),
            {
              event: "intake.submitted",
              submissionId,
              tampered: "WebhookVerificationError",
              withBom: "WebhookVerificationError",
              asUint8Array: "intake.submitted",
            },
            name,
          );
      });
    });

    t.test("a 429 is waited out for Retry-After, then the call succeeds", async (t) => {
      const printed = await rateLimited;
      t.equal(printed.statuses.at(-1), 429, "the principal used up its two requests");
      t.ok(
        printed.statuses.slice(0, -1).every((status: number) => status === 200),
        `and was served before: ${printed.statuses.join(", ")}`,
      );
      t.ok(printed.retryAfter >= 1 && printed.retryAfter <= 60, `Retry-After: ${printed.retryAfter}`);
      t.equal(printed.notices.length, 1, "one retry");
      const [notice] = printed.notices;
      t.match(notice, { attempt: 1, status: 429, method: "POST" });
      t.ok(
        notice.waitMs >= (printed.retryAfter - 1) * 1000 && notice.waitMs <= printed.retryAfter * 1000,
        `waited ${notice.waitMs} ms as Retry-After asked`,
      );
      t.ok(printed.elapsedMs >= notice.waitMs, `the call took ${printed.elapsedMs} ms`);
      t.equal(printed.status, 201);
      t.equal(await submissionsOf(limitedTenant.tenantId), 1);
    });
  });
});
