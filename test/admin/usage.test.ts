// The admin CLI speaks to a person on stderr: a usage error is a sentence and the command's usage (exit
// 2), a database it cannot use is named, without its password, with what to check (exit 1), and never a
// JSON line. `--help`, `help` and `<command> --help` list on stdout what it does (exit 0).
import net from "node:net";
import t, { type Test } from "tap";
import { runAdminCli } from "../helpers/admin-cli.ts";
import { adminCommands } from "../../admin/commands.ts";
import { tempDir } from "../helpers/temp-dir.ts";
import { freePort } from "../../scripts/throwaway-postgres.ts";

/** No database is needed before one is opened: these runs never reach one. */
const NOWHERE = { env: {} };

const noJsonLine = (t: Test, stderr: string) => t.notMatch(stderr, /^\s*[{[]/m, "no JSON on stderr");

t.test("--help, help and <command> --help answer with the usage on stdout", async (t) => {
  const [dashed, word, one] = await Promise.all([
    runAdminCli(NOWHERE, ["--help"]),
    runAdminCli(NOWHERE, ["help"]),
    runAdminCli(NOWHERE, ["portal:link", "--help"]),
  ]);
  for (const [what, run] of [
    ["--help", dashed],
    ["help", word],
  ] as const) {
    t.equal(run.code, 0, `${what}: exit 0`);
    t.equal(run.stderr, "", `${what}: nothing on stderr`);
    t.match(run.stdout, /^Usage: npm run admin -- <command> \[--flags\]$/m, `${what}: the usage line`);
    for (const [name, command] of Object.entries(adminCommands))
      t.ok(run.stdout.includes(`  ${name} ${command.usage}\n      ${command.summary}\n`), `${what} lists ${name}`);
  }
  t.equal(one.code, 0, "portal:link --help: exit 0");
  t.equal(
    one.stdout,
    `Usage: npm run admin -- portal:link --tenant T\n${adminCommands["portal:link"]?.summary ?? "-"}\n`,
    "portal:link --help: that command's usage and what it does",
  );
});

t.test("a usage error is a sentence and the command's usage on stderr, exit 2", async (t) => {
  const [misspelt, unknown] = await Promise.all([
    runAdminCli(NOWHERE, ["tenant:create", "--nmae", "Acme"]),
    runAdminCli(NOWHERE, ["tenants:create", "--name", "Acme"]),
  ]);
  t.equal(misspelt.code, 2);
  t.equal(
    misspelt.stderr,
    "Unknown option '--nmae'.\nUsage: npm run admin -- tenant:create --name N\n",
    "an unknown flag: what, and the usage",
  );
  t.equal(unknown.code, 2);
  t.equal(
    unknown.stderr,
    'There is no command "tenants:create": npm run admin -- --help lists them.\n',
    "an unknown command: where to look",
  );
  t.equal(misspelt.stdout + unknown.stdout, "", "nothing on stdout");
});

t.test("a database that cannot be reached is named without its password, with what to check", async (t) => {
  const port = await freePort();
  const run = await runAdminCli(NOWHERE, ["tenant:create", "--name", "Acme"], {
    env: { DATABASE_URL: `postgres://app:pw-in-url@127.0.0.1:${port}/integrator?password=pw-in-query` },
  });
  t.equal(run.code, 1, "exit 1");
  t.equal(run.stdout, "", "nothing on stdout");
  t.match(
    run.stderr,
    new RegExp(
      `^Cannot reach the database at postgres://app@127\\.0\\.0\\.1:${port}/integrator \\(DATABASE_URL\\): .*ECONNREFUSED.*\\.\\n` +
        `Check that the service's PostgreSQL is running and accepts connections at 127\\.0\\.0\\.1:${port}, and that DATABASE_URL is the one the service uses\\.\\n$`,
    ),
    "which database, and what to check",
  );
  t.notMatch(run.stderr, /pw-in/, "no password");
  noJsonLine(t, run.stderr);
});

t.test("an embedded PostgreSQL that cannot start says which port and folder to check", async (t) => {
  // Another program (another clone's PostgreSQL) holds the port the embedded one would listen on.
  const holder = net.createServer();
  await new Promise<void>((resolve) => holder.listen(0, "127.0.0.1", resolve));
  t.teardown(() => new Promise<void>((resolve) => holder.close(() => resolve())));
  const port = (holder.address() as net.AddressInfo).port;
  const dataDir = tempDir(t, "admin-embedded-");
  const run = await runAdminCli(NOWHERE, ["tenant:create", "--name", "Acme"], {
    env: { DATABASE_URL: "", DATA_DIR: dataDir, EMBEDDED_PG_PORT: String(port) },
  });
  t.equal(run.code, 1, "exit 1");
  t.match(run.stderr, /^Cannot use the embedded PostgreSQL \(DATABASE_URL is not set\): /, "what failed");
  t.ok(
    run.stderr.includes(
      `Check that no other program (another clone's PostgreSQL?) listens on port ${port} (EMBEDDED_PG_PORT), that DATA_DIR (${dataDir}) is the one npm start uses, or set DATABASE_URL to the service's PostgreSQL.\n`,
    ),
    `what to check (${run.stderr})`,
  );
  noJsonLine(t, run.stderr);
});
