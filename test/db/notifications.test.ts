// PostgreSQL notifications on a connection of their own (db/notifications.ts): a NOTIFY on the channel
// reaches the handler, other channels do not, and a connection the server ends is made again and listens
// again; closing stops it for good.
import t from "tap";
import pg from "pg";
import { listenForNotifications } from "../../db/notifications.ts";
import { createTestDatabase } from "../helpers/database.ts";
import { waitFor } from "../helpers/wait.ts";

t.test("notifications arrive, and keep arriving after the server ends the connection", async (t) => {
  const url = await createTestDatabase(t);
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  t.teardown(() => client.end());
  const received: string[] = [];
  const states: boolean[] = [];
  const errors: string[] = [];
  const listener = listenForNotifications(
    url,
    "integrator_test_channel",
    {
      onNotification: (payload) => received.push(payload),
      onConnected: (connected) => states.push(connected),
      onError: (message) => errors.push(message),
    },
    "integrator-notifications-test",
  );
  t.teardown(() => listener.close());
  await waitFor(
    async () => states.at(-1),
    (connected) => connected === true,
  );
  await client.query("select pg_notify('integrator_test_channel', 'one'), pg_notify('another_channel', 'no')");
  await waitFor(
    async () => received.length,
    (count) => count >= 1,
  );
  t.same(received, ["one"]);

  await client.query(
    "select pg_terminate_backend(pid) from pg_stat_activity where application_name = 'integrator-notifications-test'",
  );
  await waitFor(
    async () => states.join(","),
    (seen) => /true,false,true$/.test(seen),
  );
  t.ok(errors.length >= 1, "the lost connection is reported");
  await client.query("select pg_notify('integrator_test_channel', 'two')");
  await waitFor(
    async () => received.length,
    (count) => count >= 2,
  );
  t.same(received, ["one", "two"], "listening again after the connection was made again");

  await listener.close();
  t.equal(states.at(-1), false);
  await client.query("select pg_notify('integrator_test_channel', 'three')");
  const left = await waitFor(
    async () =>
      (
        await client.query<{ count: number }>(
          "select count(*)::int as count from pg_stat_activity where application_name = 'integrator-notifications-test'",
        )
      ).rows[0]?.count,
    (count) => count === 0,
  );
  t.equal(left, 0, "closed: no connection is left");
  t.same(received, ["one", "two"]);
});
