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

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() => resolve(typeof address === "object" && address ? address.port : 0));
    });
  });
}

export function withDatabase(url: string, name: string): string {
  const parsed = new URL(url);
  parsed.pathname = `/${name}`;
  return parsed.toString();
}

/** `settings` apply to an embedded server only (DATABASE_URL's is as it is). */
export async function throwawayPostgres(prefix: string, settings?: Record<string, string>): Promise<ThrowawayPostgres> {
  if (process.env.DATABASE_URL) return { adminUrl: process.env.DATABASE_URL, stop: async () => undefined };
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), `${prefix}-`));
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
