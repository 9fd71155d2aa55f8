// A PostgreSQL for one run of the tests or a benchmark: DATABASE_URL's server when set, else an
// embedded one in a temporary directory on a free port, removed afterwards.
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { startEmbeddedPostgres } from "../db/database.ts";

export interface ThrowawayPostgres {
  /** A URL to the server's maintenance database (postgres). */
  adminUrl: string;
  /** The embedded cluster's directory; undefined for DATABASE_URL's server. */
  databaseDir?: string;
  stop(): Promise<void>;
}

/**
 * A port for a server another process will open: free now, and outside the kernel's ephemeral range
 * (ip_local_port_range), which no outgoing connection and no `listen(0)` is ever given, so nothing else takes
 * it before that process binds it. Checked by binding it on every address, as a server listening without a
 * host does.
 */
export async function freePort(): Promise<number> {
  const lowest = 10_000;
  const ephemeralStart = Math.min(32_768, ephemeralRangeStart() ?? 32_768);
  for (let tries = 0; tries < 100; tries++) {
    const port = lowest + Math.floor(Math.random() * (ephemeralStart - lowest));
    if (await bindable(port)) return port;
  }
  throw new Error(`no free port between ${lowest} and ${ephemeralStart} after 100 tries`);
}

/** The first port of Linux's ephemeral range; undefined elsewhere (macOS's starts at 49152, above 32768). */
function ephemeralRangeStart(): number | undefined {
  try {
    const first = Number(fs.readFileSync("/proc/sys/net/ipv4/ip_local_port_range", "utf8").trim().split(/\s+/)[0]);
    return Number.isInteger(first) && first > 10_000 ? first : undefined;
  } catch {
    return undefined;
  }
}

function bindable(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.once("error", () => resolve(false));
    server.listen(port, () => server.close(() => resolve(true)));
  });
}

export function withDatabase(url: string, name: string): string {
  const parsed = new URL(url);
  parsed.pathname = `/${name}`;
  return parsed.toString();
}

/**
 * `settings` apply to an embedded server only (DATABASE_URL's is as it is); its cluster goes in a new
 * directory under `parentDir` (the temporary directory unless given).
 */
export async function throwawayPostgres(
  prefix: string,
  settings?: Record<string, string>,
  parentDir = os.tmpdir(),
): Promise<ThrowawayPostgres> {
  if (process.env.DATABASE_URL) return { adminUrl: process.env.DATABASE_URL, stop: async () => undefined };
  const dataDir = fs.mkdtempSync(path.join(parentDir, `${prefix}-`));
  const server = await startEmbeddedPostgres({ dataDir, port: await freePort(), database: "postgres", settings });
  return {
    adminUrl: server.url,
    databaseDir: server.databaseDir,
    async stop() {
      await server.stop();
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
