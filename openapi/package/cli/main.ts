#!/usr/bin/env node
// The contract package's command, `integrator-api-contract` (`npx integrator-api-contract <command>`).
// One command: `listen`, the local forwarder of webhook deliveries (listen.ts). Exit code 0 when stopped
// by Ctrl-C (or SIGTERM), 1 when it cannot go on, 2 for a command line it does not understand.
import { parseArgs } from "node:util";
import { credentialFrom } from "./credentials.ts";
import { listen, ListenStopped } from "./listen.ts";
import type { Schemas } from "../src/index.ts";

const USAGE = `Usage: integrator-api-contract listen --forward-to <url> [options]

Receives your tenant's webhook deliveries from the Integrator API over an outbound connection (no inbound
port, no tunnel) and sends each to a local URL with the exact body and headers the service signed
(webhook-id, webhook-timestamp, webhook-signature). Prints one line per delivery: when, the event, its id,
your receiver's answer and how long it took. The service records each answer as the delivery's attempt.

Options:
  --forward-to <url>   where to send each delivery, e.g. http://localhost:3000/webhooks (required)
  --api-url <url>      the service (default: $INTEGRATOR_API_URL, else a portal link's origin,
                       else http://localhost:8080)
  --events <kinds>     comma-separated event kinds to receive, e.g. intake.submitted (default: all)
  --timeout <seconds>  how long your receiver may take to answer (default 10, at most 50)
  -h, --help           this text

Credentials, from the environment (a command line can be read by other users of the machine):
  INTEGRATOR_CLIENT_ID, INTEGRATOR_CLIENT_SECRET   an API client's (tokens are fetched and renewed)
  INTEGRATOR_TOKEN            an access token, a portal credential or a portal link (.../portal#token=...)
  INTEGRATOR_WEBHOOK_SECRET   sign with this secret (whsec_...) instead of a new one each run
`;

type EventSelector = Schemas["WebhookEventSelector"];

/** A command line it cannot run: the message, then the usage, and exit code 2. */
class UsageError extends Error {
  override name = "UsageError";
}

function httpUrl(text: string, option: string): URL {
  const url = URL.canParse(text) ? new URL(text) : undefined;
  if (!url || (url.protocol !== "http:" && url.protocol !== "https:"))
    throw new UsageError(`${option} must be an http or https URL, not "${text}"`);
  return url;
}

async function main(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      "forward-to": { type: "string" },
      "api-url": { type: "string" },
      events: { type: "string" },
      timeout: { type: "string" },
      help: { type: "boolean", short: "h" },
    },
  });
  if (values.help || positionals.length === 0) {
    process.stdout.write(USAGE);
    return values.help ? 0 : 2;
  }
  const [command, ...extra] = positionals;
  if (command !== "listen") throw new UsageError(`unknown command "${command}"`);
  if (extra.length > 0) throw new UsageError(`unexpected argument "${extra[0]}"`);
  const forwardTo = values["forward-to"];
  if (forwardTo === undefined) throw new UsageError("--forward-to is required");
  const timeoutSeconds = values.timeout === undefined ? 10 : Number(values.timeout);
  if (!Number.isFinite(timeoutSeconds) || timeoutSeconds <= 0 || timeoutSeconds > 50)
    throw new UsageError("--timeout must be a number of seconds above 0 and at most 50");
  const events = values.events
    ?.split(",")
    .map((kind) => kind.trim())
    .filter(Boolean) as EventSelector[] | undefined;

  let baseUrl = "";
  const credential = credentialFrom(process.env, () => baseUrl);
  if (!credential)
    throw new UsageError(
      "no credential: set INTEGRATOR_TOKEN, or INTEGRATOR_CLIENT_ID and INTEGRATOR_CLIENT_SECRET, in the environment",
    );
  baseUrl = httpUrl(
    values["api-url"] ?? process.env.INTEGRATOR_API_URL ?? credential.linkBaseUrl ?? "http://localhost:8080",
    "--api-url",
  ).href.replace(/\/+$/, "");

  const stop = new AbortController();
  for (const signal of ["SIGINT", "SIGTERM"] as const)
    process.once(signal, () => {
      process.stderr.write("stopping: finishing the deliveries under way, then ending the session\n");
      stop.abort();
    });
  await listen({
    baseUrl,
    token: credential.token,
    forwardTo: httpUrl(forwardTo, "--forward-to"),
    events: events && events.length > 0 ? events : undefined,
    secret: process.env.INTEGRATOR_WEBHOOK_SECRET || undefined,
    timeoutMs: timeoutSeconds * 1000,
    stop: stop.signal,
    out: (line) => process.stdout.write(`${line}\n`),
    err: (line) => process.stderr.write(`${line}\n`),
  });
  return 0;
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error: unknown) => {
    if (error instanceof UsageError || (error instanceof TypeError && "code" in error)) {
      process.stderr.write(`integrator-api-contract: ${error.message}\n\n${USAGE}`);
      process.exit(2);
    }
    process.stderr.write(
      `integrator-api-contract: ${error instanceof ListenStopped || error instanceof Error ? error.message : String(error)}\n`,
    );
    process.exit(1);
  },
);
