// npm run admin -- <command> [--flags]: operator commands, JSON on stdout. Uses the same database
// settings as the server: DATABASE_URL, or the embedded PostgreSQL under DATA_DIR (reused when the
// server is running, started for the duration of the command when it is not).
import { parseArgs } from "node:util";
import { ConfigError, loadConfig } from "../foundation/config.ts";
import { buildServices, migrateAll, openDatabase } from "../app/lifecycle.ts";
import type { Services } from "../foundation/services.ts";
import { pino } from "pino";
import { createLogger } from "../foundation/logger.ts";
import { adminCommands, UsageError } from "./commands.ts";
import { errorMessage } from "../foundation/error-message.ts";

async function main(): Promise<number> {
  const [name, ...rest] = process.argv.slice(2);
  const command = name ? adminCommands[name] : undefined;
  if (!name || !command) {
    const usage = Object.entries(adminCommands)
      .map(([commandName, spec]) => `  ${commandName} ${spec.usage}`)
      .join("\n");
    process.stderr.write(
      `${name ? `Unknown command "${name}".\n` : ""}Usage: npm run admin -- <command> [--flags]\n${usage}\n`,
    );
    return 2;
  }
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
    process.stderr.write(`${JSON.stringify({ error: errorMessage(error), usage: `${name} ${command.usage}` })}\n`);
    return 2;
  }
  const config = loadConfig();
  const database = await openDatabase(config, { applicationName: "integrator-admin" });
  let services: Services | undefined;
  try {
    await migrateAll(database.db, database.url);
    // stdout carries the command's JSON; anything the services log goes to stderr.
    services = await buildServices(
      config,
      database.db,
      createLogger({ level: config.logLevel, destination: pino.destination({ dest: 2, sync: true }) }),
    );
    const stdin = command.readsStdin ? await readStdin() : undefined;
    const result = await command.run(services, flags, stdin);
    process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
    return 0;
  } catch (error) {
    const known = error instanceof UsageError || error instanceof ConfigError;
    process.stderr.write(
      `${JSON.stringify({ error: errorMessage(error), ...(known ? { usage: `${name} ${command.usage}` } : {}) })}\n`,
    );
    return known ? 2 : 1;
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
    process.stderr.write(`${JSON.stringify({ error: errorMessage(error) })}\n`);
    process.exit(1);
  },
);
