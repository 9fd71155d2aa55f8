// A TCP relay in front of a test database that can be cut (every connection closed, new ones refused), as
// a network partition or a PostgreSQL that went away, and restored on the same port, as one that came back.
import net from "node:net";
import type { Test } from "tap";

export interface DatabaseRelay {
  /** The database URL through the relay. */
  url: string;
  /** Closes every relayed connection and stops listening: connections are refused. */
  cut(): Promise<void>;
  /** Listens again on the same port. */
  restore(): Promise<void>;
}

export async function databaseRelay(t: Test, databaseUrl: string): Promise<DatabaseRelay> {
  const target = new URL(databaseUrl);
  const sockets = new Set<net.Socket>();
  const relay = net.createServer((client) => {
    const upstream = net.connect(Number(target.port), target.hostname);
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on("close", () => sockets.delete(socket));
      socket.on("error", () => socket.destroy());
    }
    client.pipe(upstream).pipe(client);
  });
  await new Promise<void>((resolve) => relay.listen(0, "127.0.0.1", resolve));
  const address = relay.address();
  const port = typeof address === "object" && address ? address.port : 0;
  const url = new URL(databaseUrl);
  url.hostname = "127.0.0.1";
  url.port = String(port);
  const cut = () =>
    new Promise<void>((resolve) => {
      relay.close(() => resolve());
      for (const socket of sockets) socket.destroy();
    });
  t.teardown(() => (relay.listening ? cut() : undefined));
  return {
    url: url.toString(),
    cut,
    restore: () => new Promise<void>((resolve) => relay.listen(port, "127.0.0.1", resolve)),
  };
}
