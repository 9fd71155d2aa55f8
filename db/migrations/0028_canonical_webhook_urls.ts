// Subscription URLs in their one spelling, as subscriptions are created from now on
// (canonicalWebhookUrl in server/url-safety.ts, whose rules this migration carries as they were when it
// was written): the WHATWG serialisation, the host without a trailing dot, unreserved percent-escapes
// decoded and the others in upper case, no empty query, no fragment. Two active subscriptions of a tenant
// that turn out to be one URL are resolved as 0007_webhook_operations resolved duplicates: the oldest
// stays, the others are deactivated, as a DELETE would (the worker fails their pending deliveries).
// A URL that does not parse (none should) is left as it is.
import type { Knex } from "knex";

const UNRESERVED = /^[A-Za-z0-9\-._~]$/;

function canonical(raw: string): string | undefined {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return undefined;
  }
  const escapes = (text: string) =>
    text.replace(/%([0-9A-Fa-f]{2})/g, (_escape, hex: string) => {
      const character = String.fromCharCode(Number.parseInt(hex, 16));
      return UNRESERVED.test(character) ? character : `%${hex.toUpperCase()}`;
    });
  const hostname = url.hostname.endsWith(".") ? url.hostname.slice(0, -1) : url.hostname;
  const host = url.port === "" ? hostname : `${hostname}:${url.port}`;
  return `${url.protocol}//${host}${escapes(url.pathname)}${escapes(url.search)}`;
}

interface SubscriptionUrl {
  id: string;
  tenant_id: string;
  url: string;
  is_active: boolean;
}

export async function up(knex: Knex): Promise<void> {
  // Subscriptions are few (a limit per tenant); no subscription is created meanwhile.
  await knex.raw("lock table integrator.webhook_subscriptions in share row exclusive mode");
  const rows = (await knex("integrator.webhook_subscriptions")
    .orderBy([{ column: "created_at" }, { column: "id" }])
    .select("id", "tenant_id", "url", "is_active")) as SubscriptionUrl[];
  const kept = new Set<string>();
  const duplicates: string[] = [];
  const respelt: { id: string; url: string }[] = [];
  for (const row of rows) {
    const url = canonical(row.url) ?? row.url;
    if (row.is_active) {
      const key = `${row.tenant_id} ${url}`;
      if (kept.has(key)) duplicates.push(row.id);
      else kept.add(key);
    }
    if (url !== row.url) respelt.push({ id: row.id, url });
  }
  // Deactivated first, so that no two active rows ever share a URL (the unique index webhook_subscriptions_active_url).
  if (duplicates.length > 0)
    await knex("integrator.webhook_subscriptions")
      .whereIn("id", duplicates)
      .update({ is_active: false, deactivated_at: knex.raw("coalesce(deactivated_at, now())") });
  for (const { id, url } of respelt) await knex("integrator.webhook_subscriptions").where({ id }).update({ url });
}

/** The spellings as sent are gone; the canonical ones stay, which every version accepts. */
export async function down(): Promise<void> {}
