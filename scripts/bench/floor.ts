// The yardsticks of the benchmarks (their SQL lives here, not in db/: it is the floor, not the service).
// Intake's floor: a bare express + pg server that parses a JSON body and inserts one row into the same
// PostgreSQL (autocommit, durable commit), no auth, no validation, no logging.
import http from "node:http";
import express from "express";
import pg from "pg";

export interface Listening {
  url: string;
  close(): Promise<void>;
}

export async function listen(app: http.RequestListener): Promise<Listening> {
  const server = http.createServer(app);
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  return {
    url: `http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

export async function startIntakeFloor(databaseUrl: string, poolMax: number): Promise<Listening & { pool: pg.Pool }> {
  const pool = new pg.Pool({ connectionString: databaseUrl, max: poolMax });
  await pool.query(
    "create table if not exists bench_floor (id uuid primary key default gen_random_uuid(), body jsonb not null, created_at timestamptz not null default now())",
  );
  const app = express();
  app.use(express.json());
  app.post("/insert", async (req, res) => {
    const { rows } = await pool.query("insert into bench_floor (body) values ($1) returning id, created_at", [
      req.body,
    ]);
    res.status(201).json(rows[0]);
  });
  const listening = await listen(app);
  return {
    ...listening,
    pool,
    async close() {
      await listening.close();
      await pool.end();
    },
  };
}
