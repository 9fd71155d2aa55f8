// npm run mock: Prism serves the document on MOCK_PORT and answers every operation with the document's
// own examples; each answer is one of the examples of a declared success response and validates. npm
// runs Prism in its own place (exec), so a SIGTERM to npm (a supervisor, Ctrl-C) stops it.
import fs from "node:fs";
import net from "node:net";
import t from "tap";
import { startMock } from "../helpers/mock.ts";
import { waitFor } from "../helpers/wait.ts";
import { mediaCases, schemaValidator } from "../helpers/openapi-media.ts";
import { loadDocument, resolveRef } from "../../http/openapi-document.ts";

/** A value for each path parameter, as the examples use them. */
const PATH_VALUES: Record<string, string> = {
  submission_id: "0192f0c4-8a9e-7c1b-9a4e-3f2d1c0b5a69",
  subscription_id: "0192f0c2-7d1e-7a3b-8c4d-5e6f7a8b9c0d",
  partner_key: "benefits-co",
};

/** A path parameter's value: the one the examples use, else its declared example, else one of its format. */
function pathValue(path: string, method: string, name: string): string {
  if (PATH_VALUES[name]) return PATH_VALUES[name];
  const document = loadDocument();
  const item = (document.paths?.[path] ?? {}) as Record<string, { parameters?: unknown[] } | undefined>;
  const parameters = [...((item.parameters as unknown[]) ?? []), ...(item[method]?.parameters ?? [])].map(
    (parameter) =>
      resolveRef(document, parameter) as {
        name?: string;
        in?: string;
        example?: unknown;
        schema?: Record<string, unknown>;
      },
  );
  const declared = parameters.find((parameter) => parameter.in === "path" && parameter.name === name);
  const schema = declared?.schema ?? {};
  const example = declared?.example ?? (Array.isArray(schema.examples) ? schema.examples[0] : schema.example);
  if (example !== undefined) return String(example);
  return schema.format === "uuid" ? "0192f0c4-8a9e-7c1b-9a4e-3f2d1c0b5a69" : "example";
}

t.test("npm run mock answers every operation with a valid example", async (t) => {
  const { baseUrl: base } = await startMock(t);
  const compile = schemaValidator();
  const cases = mediaCases().filter((c) => c.kind === "path");
  const operations = new Map<string, { method: string; path: string }>();
  for (const c of cases) operations.set(`${c.method} ${c.path}`, { method: c.method, path: c.path });
  const document = loadDocument();
  let checked = 0;
  for (const { method, path } of operations.values()) {
    const request = cases.find((c) => c.method === method && c.path === path && c.part === "request body");
    const successes = cases.filter((c) => c.method === method && c.path === path && /^2/.test(c.status ?? ""));
    const url =
      base + path.replace(/\{(\w+)\}/g, (_, name: string) => encodeURIComponent(pathValue(path, method, name)));
    const headers: Record<string, string> = { Authorization: "Bearer mock-token" };
    let body: string | undefined;
    if (request) {
      const example = request.examples[0]?.value;
      headers["Content-Type"] = request.mediaType;
      body =
        request.mediaType === "application/x-www-form-urlencoded"
          ? new URLSearchParams(example as Record<string, string>).toString()
          : JSON.stringify(example);
    }
    const res = await fetch(url, { method: method.toUpperCase(), headers, ...(body === undefined ? {} : { body }) });
    const text = await res.text();
    const declared = Object.keys(
      (document.paths?.[path] as Record<string, { responses: Record<string, unknown> }>)[method]?.responses ?? {},
    );
    t.ok(
      /^2/.test(String(res.status)) && declared.includes(String(res.status)),
      `${method} ${path} answers a declared success (${res.status})`,
    );
    const success = successes.find((c) => c.status === String(res.status));
    if (!success) {
      t.equal(text, "", `${method} ${path}: no body for a status without content`);
      checked++;
      continue;
    }
    const answer: unknown = JSON.parse(text);
    const validate = compile(success.schema);
    t.ok(validate(answer), `${method} ${path}: the mocked answer validates`, { errors: validate.errors });
    t.ok(
      success.examples.some((example) => JSON.stringify(example.value) === JSON.stringify(answer)),
      `${method} ${path}: the mocked answer is one of the document's examples`,
    );
    checked++;
  }
  t.equal(checked, operations.size);
  t.ok(checked >= 15, `${checked} operations mocked`);
});

/** The processes whose parent is `pid` (Linux: /proc), with their arguments. */
function childrenOf(pid: number): { pid: number; argv: string[] }[] {
  const children = [];
  for (const name of fs.readdirSync("/proc").filter((entry) => /^\d+$/.test(entry))) {
    try {
      // The parent is the 4th field, after the command name in parentheses (which may hold spaces).
      const stat = fs.readFileSync(`/proc/${name}/stat`, "utf8");
      if (Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]) !== pid) continue;
      children.push({ pid: Number(name), argv: fs.readFileSync(`/proc/${name}/cmdline`, "utf8").split("\0") });
    } catch {
      // Gone since the listing.
    }
  }
  return children;
}

/** Whether any process of the group `pgid` is left. */
function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch {
    return false;
  }
}

t.test("SIGTERM to npm run mock stops Prism at once and leaves no process behind", async (t) => {
  const mock = await startMock(t);
  const npmPid = mock.npm.pid as number;
  const children = childrenOf(npmPid);
  t.equal(children.length, 1, "npm started one process");
  t.match(children[0]?.argv.join(" "), /^\S*node\S* \S*prism mock /, "Prism itself, not a shell around it");
  const exited = new Promise<number>((resolve) => mock.npm.once("exit", () => resolve(performance.now())));
  const sent = performance.now();
  mock.npm.kill("SIGTERM");
  const stoppedAfterMs = (await exited) - sent;
  t.ok(stoppedAfterMs < 5000, `npm exited ${Math.round(stoppedAfterMs)} ms after the signal`);
  const left = await waitFor(
    async () => groupAlive(npmPid),
    (alive) => !alive,
    { seconds: 5 },
  );
  t.notOk(left, "no process of the mock's group is left");
  const port = Number(new URL(mock.baseUrl).port);
  const refused = await new Promise<boolean>((resolve) => {
    const socket = net.connect(port, "127.0.0.1");
    socket.once("connect", () => {
      socket.destroy();
      resolve(false);
    });
    socket.once("error", () => resolve(true));
  });
  t.ok(refused, "nothing listens on the mock's port any more");
});
