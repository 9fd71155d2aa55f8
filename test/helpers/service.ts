// The real service in this process (app/lifecycle.ts startService, role api): its own test database
// and data directory, listening on a free port, stopped when the test ends.
import { randomBytes } from "node:crypto";
import type { Test } from "tap";
import { loadConfig } from "../../foundation/config.ts";
import { startService, type RunningService } from "../../app/lifecycle.ts";
import { createLogger } from "../../foundation/logger.ts";
import { createTestDatabase } from "./database.ts";
import { tempDir } from "./temp-dir.ts";

export interface ApiService {
  running: RunningService;
  port: number;
  baseUrl: string;
}

/** `env` adds to or overrides the test settings (load shedding off: a busy machine's event loop lags). */
export async function startApiService(t: Test, env: Record<string, string> = {}): Promise<ApiService> {
  const config = loadConfig({
    NODE_ENV: "test",
    DATABASE_URL: await createTestDatabase(t),
    ENCRYPTION_KEY: randomBytes(32).toString("hex"),
    DATA_DIR: tempDir(t, "integrator-api-"),
    PORT: "0",
    LOAD_SHED_EVENT_LOOP_DELAY_MS: "0",
    ...env,
  });
  const running = await startService(config, "api", createLogger({ level: "silent" }));
  t.teardown(() => running.stop("test over"));
  if (running.port === undefined) throw new Error("the API did not listen");
  return { running, port: running.port, baseUrl: `http://127.0.0.1:${running.port}` };
}
