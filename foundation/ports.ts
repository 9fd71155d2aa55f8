// Opening the process's listening ports (the API's PORT, the metrics' METRICS_PORT). A port that cannot be
// opened is something the person starting the service can fix, so it fails the start with one sentence
// naming the setting (app/main.ts prints it), not a log line with a stack.
import type { Server } from "node:net";

export class PortUnavailable extends Error {
  override name = "PortUnavailable";
}

const REASONS: Record<string, (port: number, setting: string, host: string | undefined) => string> = {
  EADDRINUSE: (port, setting) =>
    `port ${port} (${setting}) is already in use, perhaps by another start of this service: stop it, or set ${setting} to a free port`,
  EACCES: (port, setting) =>
    `port ${port} (${setting}) may not be opened by this user: set ${setting} to a port above 1023`,
  EADDRNOTAVAIL: (port, setting, host) =>
    `port ${port} (${setting}) cannot be opened on ${host ?? "that address"}, which is not an address of this machine`,
};

/** Listens on `port` (0: any free port) and `host` (undefined: every address); resolves once listening. */
export function listenOn(server: Server, port: number, host: string | undefined, setting: string): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const failed = (error: NodeJS.ErrnoException) => {
      const reason = error.code ? REASONS[error.code] : undefined;
      reject(reason ? new PortUnavailable(reason(port, setting, host), { cause: error }) : error);
    };
    server.once("error", failed);
    server.listen(port, host, () => {
      server.off("error", failed);
      resolve();
    });
  });
}
