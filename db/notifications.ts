// PostgreSQL notifications on one channel (LISTEN), on a connection of their own outside the pool: a
// listening connection must stay open, and a pooled one would be handed to other work. A lost connection is
// made again, after 1 s, then up to 30 s between tries; `onConnected` says when notifications arrive and
// when they stop, so that a waiter can look by itself meanwhile.
import pg from "pg";

export interface NotificationListener {
  close(): Promise<void>;
}

export function listenForNotifications(
  connectionString: string,
  channel: string,
  handlers: {
    onNotification(payload: string): void;
    onConnected(connected: boolean): void;
    onError(message: string): void;
  },
  applicationName = "integrator-notifications",
): NotificationListener {
  let client: pg.Client | undefined;
  let closed = false;
  let retryMs = 1000;
  let retry: NodeJS.Timeout | undefined;

  const connect = async (): Promise<void> => {
    const current = new pg.Client({ connectionString, application_name: applicationName });
    client = current;
    const lost = (message: string) => {
      if (client !== current) return;
      client = undefined;
      handlers.onConnected(false);
      current.removeAllListeners("notification");
      current.end().catch(() => undefined);
      if (closed) return;
      handlers.onError(message);
      retry = setTimeout(() => void connect(), retryMs);
      retry.unref();
      retryMs = Math.min(retryMs * 2, 30_000);
    };
    current.on("error", (error) => lost(`notifications: ${error.message}`));
    current.on("end", () => lost("notifications: the connection ended"));
    current.on("notification", (message) => {
      if (message.channel === channel && message.payload !== undefined) handlers.onNotification(message.payload);
    });
    try {
      await current.connect();
      await current.query(`listen ${current.escapeIdentifier(channel)}`);
      if (client !== current || closed) return;
      retryMs = 1000;
      handlers.onConnected(true);
    } catch (error) {
      lost(`notifications: ${error instanceof Error ? error.message : String(error)}`);
    }
  };
  void connect();

  return {
    async close() {
      closed = true;
      clearTimeout(retry);
      const current = client;
      client = undefined;
      handlers.onConnected(false);
      await current?.end().catch(() => undefined);
    },
  };
}
