// The two clients of npm run bench:intake -- --callbacks, each run as a child process so that neither shares the
// service's event loop. argv[2] is a Flood or a Reads as JSON; each prints "started" once it runs, works
// for `seconds`, then prints its report as JSON.
// - flood: senders post one callback body after another (each sender its own keep-alive connection from
//   127.0.0.1, a new one whenever the service closes it);
// - reads: tenant B's GET, one every `intervalMs` (a steady tenant, not one saturating its own client).
import http from "node:http";

export interface Flood {
  role: "flood";
  /** Callback URLs, one per sender. */
  urls: string[];
  tenantId: string;
  /** Keys of the payload (besides `event` and the padding). */
  keys: number;
  /** The body's size in bytes (padded up to it). */
  bytes: number;
  seconds: number;
}

export interface FloodReport {
  /** Answers by status ("error" for a connection that failed). */
  answers: Record<string, number>;
  bodyBytes: number;
  payloadKeys: number;
  /** The flood's own CPU time (user + system), ms. */
  cpuMs: number;
}

export interface Reads {
  role: "reads";
  url: string;
  token: string;
  intervalMs: number;
  seconds: number;
}

export interface ReadsReport {
  /** Latencies of the answers 200, ms, sorted. */
  latencies: number[];
  /** Answers other than 200 (shed, rate-limited, failed). */
  failures: number;
}

/** A callback body of `bytes` bytes whose payload holds `keys` small keys: the shape of the reported flood. */
export function floodBody(tenantId: string, keys: number, bytes: number): Buffer {
  const payload: Record<string, unknown> = { event: "flood" };
  for (let i = 0; i < keys; i++) payload[`k${i}`] = i;
  const bare = JSON.stringify({ tenant_id: tenantId, payload }).length;
  const padding = bytes - bare - ',"pad":""'.length;
  if (padding > 0) payload.pad = "x".repeat(padding);
  return Buffer.from(JSON.stringify({ tenant_id: tenantId, payload }));
}

function exchange(
  url: string,
  options: http.RequestOptions,
  body: Buffer | undefined,
): Promise<{ status: string; ms: number }> {
  const started = performance.now();
  return new Promise((resolve) => {
    const done = (status: string) => resolve({ status, ms: performance.now() - started });
    const req = http.request(url, options);
    req.on("response", (res) => {
      res.resume();
      res.on("end", () => done(String(res.statusCode)));
      res.on("error", () => done("error"));
    });
    req.on("error", () => done("error"));
    req.end(body);
  });
}

async function flood(job: Flood): Promise<FloodReport> {
  const body = floodBody(job.tenantId, job.keys, job.bytes);
  const answers: Record<string, number> = {};
  process.stdout.write("started\n");
  const deadline = Date.now() + job.seconds * 1000;
  await Promise.all(
    job.urls.map(async (url) => {
      const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
      while (Date.now() < deadline) {
        const { status } = await exchange(
          url,
          {
            method: "POST",
            agent,
            headers: {
              "Content-Type": "application/json",
              "Content-Length": String(body.length),
              // Any signature: what is measured is the work done before it is known to be wrong.
              "X-Callback-Signature": "ab".repeat(32),
            },
          },
          body,
        );
        answers[status] = (answers[status] ?? 0) + 1;
      }
      agent.destroy();
    }),
  );
  const cpu = process.cpuUsage();
  return { answers, bodyBytes: body.length, payloadKeys: job.keys, cpuMs: (cpu.user + cpu.system) / 1000 };
}

async function reads(job: Reads): Promise<ReadsReport> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const options = { agent, headers: { Authorization: `Bearer ${job.token}` } };
  await exchange(job.url, options, undefined); // the connection, opened before the clock starts
  process.stdout.write("started\n");
  const latencies: number[] = [];
  let failures = 0;
  const deadline = Date.now() + job.seconds * 1000;
  while (Date.now() < deadline) {
    const next = performance.now() + job.intervalMs;
    const { status, ms } = await exchange(job.url, options, undefined);
    if (status === "200") latencies.push(ms);
    else failures += 1;
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, next - performance.now())));
  }
  agent.destroy();
  return { latencies: latencies.sort((a, b) => a - b), failures };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const job = JSON.parse(process.argv[2] ?? "{}") as Flood | Reads;
  const report = job.role === "flood" ? await flood(job) : await reads(job);
  process.stdout.write(`${JSON.stringify(report)}\n`);
}
