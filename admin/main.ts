// npm run admin -- <command> [--flags]: operator commands. A command's result is JSON on stdout; stderr is
// for a person: sentences saying what went wrong and what to do (a usage error exits 2, a failure 1), and
// the warnings of the services the command starts. `--help` (or `help`, or `<command> --help`) lists the
// commands on stdout. Uses the same database settings as the server: DATABASE_URL, or the embedded
// PostgreSQL under DATA_DIR (reused when the server is running, started for the duration of the command
// when it is not).
import { parseArgs } from "node:util";
import { ConfigError, loadConfig, type Config } from "../foundation/config.ts";
import type { DatabaseHandle } from "../app/services.ts";
import type * as DatabaseModule from "../db/database.ts";
import type { Services } from "../foundation/services.ts";
import { createLogger } from "../foundation/logger.ts";
import { adminCommands, UsageError, type AdminCommand } from "./commands.ts";
import { errorMessage } from "../foundation/error-message.ts";

const HELP = new Set(["--help", "-h", "help"]);
const INVOCATION = "npm run admin --";

/** Every command with its flags and what it does. */
function commandList(): string {
  const entries = Object.entries(adminCommands).map(
    ([name, command]) => `  ${name} ${command.usage}\n      ${command.summary}`,
  );
  return (
    `Usage: ${INVOCATION} <command> [--flags]\n` +
    "Operator commands on the service's database (DATABASE_URL, or the embedded PostgreSQL under DATA_DIR).\n" +
    `Each prints its result as JSON on standard output; ${INVOCATION} <command> --help shows one.\n\n` +
    `Commands:\n${entries.join("\n")}\n`
  );
}

function commandHelp(name: string, command: AdminCommand): string {
  return `Usage: ${INVOCATION} ${name} ${command.usage}\n${command.summary}\n`;
}

/** A message as a sentence: it ends with a full stop. */
function sentence(text: string): string {
  return /[.!?]$/.test(text) ? text : `${text}.`;
}

/** The database URL as a person may see it, and its host: without its password (nor query parameters, which may hold one). */
function databaseAddress(url: string): { address: string; host: string } {
  try {
    const parsed = new URL(url);
    parsed.password = "";
    parsed.search = "";
    return { address: parsed.toString(), host: parsed.host };
  } catch {
    return { address: "(not a URL)", host: "its host" };
  }
}

/**
 * What to check when the database cannot be used: which one (never its password) and what usually stops
 * it. Undefined when the failure is not the database's.
 */
function databaseProblem(
  { EmbeddedPostgresUnavailable, isDatabaseUnavailable }: typeof DatabaseModule,
  config: Config,
  error: unknown,
  opening: boolean,
): string | undefined {
  if (error instanceof EmbeddedPostgresUnavailable) return error.message;
  const code = (error as { code?: unknown }).code;
  const login = code === "28P01" || code === "28000";
  const missing = code === "3D000";
  const cause = sentence(errorMessage(error));
  if (config.databaseUrl) {
    if (!login && !missing && !isDatabaseUnavailable(error)) return undefined;
    const { address, host } = databaseAddress(config.databaseUrl);
    if (login)
      return `The database at ${address} (DATABASE_URL) refused the login: ${cause}\nCheck the user name and password in DATABASE_URL.`;
    if (missing)
      return `The database at ${address} (DATABASE_URL) does not exist: ${cause}\nCheck the database name in DATABASE_URL.`;
    return (
      `Cannot reach the database at ${address} (DATABASE_URL): ${cause}\n` +
      `Check that the service's PostgreSQL is running and accepts connections at ${host}, ` +
      "and that DATABASE_URL is the one the service uses."
    );
  }
  if (!opening && !isDatabaseUnavailable(error)) return undefined;
  return (
    `Cannot use the embedded PostgreSQL (DATABASE_URL is not set): ${cause}\n` +
    `Check that no other program (another clone's PostgreSQL?) listens on port ${config.embeddedPgPort} (EMBEDDED_PG_PORT), ` +
    `that DATA_DIR (${config.dataDir}) is the one npm start uses, or set DATABASE_URL to the service's PostgreSQL.`
  );
}

/** The services' log lines as sentences on stderr; info lines are the service's, so the CLI shows warnings up. */
function sentenceLogger(config: Config) {
  return createLogger({
    level: config.logLevel === "info" ? "warn" : config.logLevel,
    destination: {
      write(line: string) {
        const { level, msg } = JSON.parse(line) as { level?: string; msg?: string };
        process.stderr.write(`${level ?? "log"}: ${sentence(msg ?? "")}\n`);
      },
    },
  });
}

async function main(): Promise<number> {
  const [name, ...rest] = process.argv.slice(2);
  if (name === undefined) {
    process.stderr.write(`Name a command.\n${commandList()}`);
    return 2;
  }
  if (HELP.has(name)) {
    const topic = rest[0];
    const command = topic === undefined ? undefined : adminCommands[topic];
    if (topic !== undefined && !command) {
      process.stderr.write(`There is no command "${topic}": ${INVOCATION} --help lists them.\n`);
      return 2;
    }
    process.stdout.write(command && topic ? commandHelp(topic, command) : commandList());
    return 0;
  }
  const command = adminCommands[name];
  if (!command) {
    process.stderr.write(`There is no command "${name}": ${INVOCATION} --help lists them.\n`);
    return 2;
  }
  if (rest.some((arg) => arg === "--help" || arg === "-h")) {
    process.stdout.write(commandHelp(name, command));
    return 0;
  }
  const usageError = (message: string) => {
    process.stderr.write(`${sentence(message)}\nUsage: ${INVOCATION} ${name} ${command.usage}\n`);
    return 2;
  };
  let flags: Record<string, string | undefined>;
  try {
    const options = {
      ...Object.fromEntries(command.flags.map((flag) => [flag, { type: "string" as const }])),
      ...Object.fromEntries((command.switches ?? []).map((name) => [name, { type: "boolean" as const }])),
    };
    const parsed = parseArgs({ args: rest, options, strict: true, allowPositionals: false }).values;
    flags = Object.fromEntries(
      Object.entries(parsed).map(([flag, value]) => [flag, typeof value === "boolean" ? String(value) : value]),
    );
  } catch (error) {
    return usageError(errorMessage(error));
  }
  let config: Config;
  try {
    config = loadConfig();
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    process.stderr.write(`Configuration error: ${sentence(error.message)}\n`);
    return 2;
  }
  // What opens the database (and everything the services are built from) is loaded only now: help and
  // usage errors are answered without it.
  const [{ buildServices, migrateAll, openDatabase }, databaseModule] = await Promise.all([
    import("../app/services.ts"),
    import("../db/database.ts"),
  ]);
  let database: DatabaseHandle;
  try {
    database = await openDatabase(config, { applicationName: "integrator-admin" });
  } catch (error) {
    process.stderr.write(
      `${databaseProblem(databaseModule, config, error, true) ?? `${name} failed: ${sentence(errorMessage(error))}`}\n`,
    );
    return 1;
  }
  let services: Services | undefined;
  try {
    await migrateAll(database.db, database.url);
    services = await buildServices(config, database.db, sentenceLogger(config));
    const stdin = command.readsStdin ? await readStdin() : undefined;
    const result = await command.run(services, flags, stdin);
    process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
    return 0;
  } catch (error) {
    if (error instanceof UsageError || error instanceof ConfigError) return usageError(error.message);
    process.stderr.write(
      `${databaseProblem(databaseModule, config, error, false) ?? `${name} failed: ${sentence(errorMessage(error))}`}\n`,
    );
    return 1;
  } finally {
    await database.close();
  }
}

/** Everything piped on standard input; nothing when it is a terminal (the command then says what to pipe). */
async function readStdin(): Promise<string> {
  if (process.stdin.isTTY) return "";
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString("utf8");
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(`The admin CLI failed: ${sentence(errorMessage(error))}\n`);
    process.exit(1);
  },
);
