// The admin CLI's commands (admin/main.ts parses flags and prints what a command returns).
import type { Services } from "../foundation/services.ts";
import { createTenant, disableClient, disableUser, findPrincipalOfTenant, tenantExists } from "../db/principals.ts";
import { rotateSigningKeys } from "../foundation/auth/tokens.ts";
import { registerClient, registerUser } from "../handlers/auth/principals.ts";
import { decodeJwt } from "jose";
import { listAudit, recordAudit, SERVICE_AUDIT_TENANT_ID } from "../db/audit.ts";
import { linkItem, setItemStatus, type ItemChange } from "../handlers/intake/item-changes.ts";
import { changePartnerStatus, entitlePartner, registerPartner } from "../handlers/partners/registry.ts";
import { ChangeRefused } from "../foundation/refusals.ts";
import { emitEvent, EVENT_KINDS, isEventKind, type EventDataByKind } from "../db/events.ts";
import { isUuid } from "../db/ids.ts";
import { createPortalLink } from "../handlers/webhooks/portal-sessions.ts";

/** The actor of the audit actions the admin CLI records. */
export const ADMIN_CLI_ACTOR = "admin-cli";

export class UsageError extends Error {
  override name = "UsageError";
}

export interface AdminCommand {
  usage: string;
  /** What the command does, in a sentence (the help lists it). */
  summary: string;
  flags: string[];
  /** Flags that take no value (`--revoke-previous`); given, they read "true". */
  switches?: string[];
  /** The command reads a secret from standard input (never from argv, where ps and shell history show it). */
  readsStdin?: boolean;
  run(services: Services, flags: Record<string, string | undefined>, stdin?: string): Promise<unknown>;
}

/** The secret piped on standard input: its first line, without the line break. */
export function secretFromStdin(stdin: string | undefined, what: string): string {
  const secret = (stdin ?? "").split(/\r?\n/)[0] ?? "";
  if (secret === "")
    throw new UsageError(`pass the ${what} on standard input, e.g. printf '%s' "$PASSWORD" | npm run admin -- ...`);
  return secret;
}

export function required(flags: Record<string, string | undefined>, name: string): string {
  const value = flags[name];
  if (value === undefined || value.trim() === "") throw new UsageError(`--${name} is required`);
  return value.trim();
}

export async function requiredTenant(services: Services, flags: Record<string, string | undefined>): Promise<string> {
  const tenantId = required(flags, "tenant").toLowerCase();
  if (!isUuid(tenantId) || !(await tenantExists(services.db, tenantId)))
    throw new UsageError(`--tenant ${tenantId} is not an existing tenant id`);
  return tenantId;
}

export function roleList(raw: string): string[] {
  const roles = [
    ...new Set(
      raw
        .split(",")
        .map((role) => role.trim())
        .filter(Boolean),
    ),
  ];
  if (roles.length === 0) throw new UsageError("--roles needs at least one role, e.g. client_admin");
  if (roles.some((role) => !/^[a-z][a-z0-9_:.-]{0,63}$/.test(role)))
    throw new UsageError("--roles takes comma-separated role names such as client_admin,platform_admin");
  return roles;
}

export const adminCommands: Record<string, AdminCommand> = {
  "tenant:create": {
    usage: "--name N",
    summary: "Creates a tenant; prints its id and name.",
    flags: ["name"],
    run: async (services, flags) => createTenant(services.db, required(flags, "name")),
  },
  "user:create": {
    usage: "--tenant T --username U --roles r1,r2 (the password on standard input)",
    summary: "Creates a user of a tenant, who signs in with the password grant of POST /token.",
    flags: ["tenant", "username", "roles", "password"],
    readsStdin: true,
    run: async (services, flags, stdin) => {
      if (flags.password !== undefined)
        throw new UsageError(
          "--password is not accepted (command lines show in ps and shell history): pass the password on standard input",
        );
      const tenantId = await requiredTenant(services, flags);
      const password = secretFromStdin(stdin, "password");
      if (password.length < 8) throw new UsageError("the password must be at least 8 characters");
      try {
        return await registerUser(services.db, {
          tenantId,
          username: required(flags, "username"),
          password,
          roles: roleList(required(flags, "roles")),
        });
      } catch (error) {
        if ((error as { code?: string }).code === "23505") throw new UsageError(`username ${flags.username} is taken`);
        throw error;
      }
    },
  },
  "user:disable": {
    usage: "--username U",
    summary: "Disables a user: no new token, and its tokens are refused within AUTH_REFRESH_SECONDS.",
    flags: ["username"],
    run: async (services, flags) => {
      const user = await disableUser(services.db, required(flags, "username"));
      if (!user) throw new UsageError(`--username ${flags.username} is not an existing user`);
      return user;
    },
  },
  "client:disable": {
    usage: "--client C",
    summary: "Disables an API client: no new token, and its tokens are refused within AUTH_REFRESH_SECONDS.",
    flags: ["client"],
    run: async (services, flags) => {
      const client = await disableClient(services.db, required(flags, "client"));
      if (!client) throw new UsageError(`--client ${flags.client} is not an existing client id`);
      return client;
    },
  },
  "signing-key:rotate": {
    usage: "[--revoke-previous]",
    summary: "Signs tokens with a new key from now on; --revoke-previous also revokes every earlier key.",
    flags: [],
    switches: ["revoke-previous"],
    run: async (services, flags) => {
      const revokePrevious = flags["revoke-previous"] === "true";
      const { kid, retired, revoked } = await rotateSigningKeys(services.db, services.secretBox, {
        revokePrevious,
        actor: ADMIN_CLI_ACTOR,
      });
      // This process verifies with the new set at once; every other within AUTH_REFRESH_SECONDS.
      await services.tokens.refresh();
      return {
        kid,
        retired,
        revoked,
        retired_keys_verify_for_seconds: revokePrevious ? 0 : services.config.maxTokenLifetimeSeconds + 300,
      };
    },
  },
  "client:create": {
    usage: "--tenant T --roles r1",
    summary: "Creates an API client of a tenant; prints its client_id and its secret (shown once).",
    flags: ["tenant", "roles"],
    run: async (services, flags) => {
      const tenantId = await requiredTenant(services, flags);
      const client = await registerClient(services.db, { tenantId, roles: roleList(required(flags, "roles")) });
      return {
        client_id: client.client_id,
        client_secret: client.client_secret,
        tenant_id: client.tenant_id,
        roles: client.roles,
      };
    },
  },
  "token:issue": {
    usage:
      "--tenant T --subject S (a user's id or username, or a client_id, of that tenant) [--roles r1] [--expires-in SECONDS]",
    summary: "Issues an access token for a user or API client of a tenant (recorded in its audit trail).",
    flags: ["tenant", "subject", "roles", "expires-in"],
    run: async (services, flags) => {
      const tenantId = await requiredTenant(services, flags);
      const named = required(flags, "subject");
      const principal = await findPrincipalOfTenant(services.db, tenantId, named);
      if (!principal)
        throw new UsageError(`--subject ${named} is no user (id or username) or client of tenant ${tenantId}`);
      if (principal.disabled) throw new UsageError(`--subject ${named}: that ${principal.kind} is disabled`);
      const roles = flags.roles === undefined ? principal.roles : roleList(flags.roles);
      const foreign = roles.filter((role) => !principal.roles.includes(role));
      if (foreign.length > 0)
        throw new UsageError(
          `--roles ${foreign.join(",")}: not held by that ${principal.kind} (${principal.roles.join(",")})`,
        );
      const expiresRaw = flags["expires-in"];
      if (expiresRaw !== undefined && !/^\d{1,7}$/.test(expiresRaw))
        throw new UsageError("--expires-in must be a number of seconds");
      const expiresIn = expiresRaw === undefined ? undefined : Number(expiresRaw);
      const longest = services.config.maxTokenLifetimeSeconds;
      if (expiresIn !== undefined && (expiresIn < 1 || expiresIn > longest))
        throw new UsageError(`--expires-in must be between 1 and ${longest} seconds (AUTH_MAX_TOKEN_LIFETIME_SECONDS)`);
      const issued = await services.tokens.issue({
        subject: principal.subject,
        tenantId,
        roles,
        ...(expiresIn === undefined ? {} : { expiresInSeconds: expiresIn }),
      });
      // Recorded before the token is printed: no token leaves the CLI unaudited. Its id, never the token.
      await recordAudit(services.db, {
        tenantId,
        action: "auth.token_issued",
        actor: ADMIN_CLI_ACTOR,
        resourceType: principal.kind,
        resourceId: principal.subject,
        requestId: undefined,
        details: {
          token_id: decodeJwt(issued.token).jti,
          roles,
          expires_at: new Date(issued.expiresAt * 1000).toISOString(),
        },
      });
      return {
        access_token: issued.token,
        token_type: "bearer",
        expires_in: issued.expiresIn,
        subject: principal.subject,
        roles,
      };
    },
  },
  "portal:link": {
    usage: "--tenant T",
    summary:
      "Prints a new link to the tenant's webhook portal, valid for PORTAL_SESSION_TTL_MINUTES (for when the first start's link has expired).",
    flags: ["tenant"],
    run: async (services, flags) => {
      const tenantId = await requiredTenant(services, flags);
      // Made by the admin CLI as POST /v1/webhooks/portal-sessions makes one, and audited as its action.
      return createPortalLink(services, {
        subject: ADMIN_CLI_ACTOR,
        tenantId,
        creatorTenantId: tenantId,
        baseUrl: services.config.publicBaseUrl,
        requestId: undefined,
      });
    },
  },
  "audit:list": {
    usage: `--tenant T [--action A] (T ${SERVICE_AUDIT_TENANT_ID}: the service's own actions, such as signing-key:rotate)`,
    summary: "Lists a tenant's audit actions, oldest first.",
    flags: ["tenant", "action"],
    run: async (services, flags) => {
      const own = required(flags, "tenant").toLowerCase() === SERVICE_AUDIT_TENANT_ID;
      const tenantId = own ? SERVICE_AUDIT_TENANT_ID : await requiredTenant(services, flags);
      return listAudit(services.db, tenantId, flags.action);
    },
  },
  // An item is addressed with its tenant (the submission's tenant_id), as every key of a tenant's rows is.
  "item:link": {
    usage: "--tenant T --item ID --document-id D",
    summary: "Links an intake item to its document (pending to uploaded).",
    flags: ["tenant", "item", "document-id"],
    run: async (services, flags) => {
      const tenantId = await requiredTenant(services, flags);
      return itemChange(() => linkItem(services, tenantId, required(flags, "item"), required(flags, "document-id")));
    },
  },
  "item:status": {
    usage: "--tenant T --item ID --status S [--error MSG]",
    summary: "Moves an intake item to another status (processing, completed, failed, ...).",
    flags: ["tenant", "item", "status", "error"],
    run: async (services, flags) => {
      const tenantId = await requiredTenant(services, flags);
      return itemChange(() =>
        setItemStatus(services, tenantId, required(flags, "item"), required(flags, "status"), flags.error),
      );
    },
  },
  "partner:create": {
    usage: "--key K --name N --launch-url URL [--context-keys a,b]",
    summary: "Registers a partner; prints its callback secret (shown once).",
    flags: ["key", "name", "launch-url", "context-keys"],
    run: (services, flags) =>
      refusalsAsUsage(async () => {
        const { callback_secret, ...partner } = await registerPartner(services, {
          partnerKey: required(flags, "key"),
          name: required(flags, "name"),
          launchUrl: required(flags, "launch-url"),
          contextKeys: (flags["context-keys"] ?? "")
            .split(",")
            .map((key) => key.trim())
            .filter(Boolean),
        });
        // The secret is shown here once; the database keeps it sealed.
        return {
          partner_key: partner.partner_key,
          callback_secret,
          name: partner.name,
          launch_url: partner.launch_url,
          context_keys: partner.context_keys,
          status: partner.status,
          created_at: partner.created_at,
        };
      }, PARTNER_CREATE_FLAGS),
  },
  "partner:entitle": {
    usage: "--tenant T --partner K",
    summary: "Lets a tenant launch and switch to a partner.",
    flags: ["tenant", "partner"],
    run: async (services, flags) => {
      const tenantId = await requiredTenant(services, flags);
      return refusalsAsUsage(() => entitlePartner(services, tenantId, required(flags, "partner")), PARTNER_FLAGS);
    },
  },
  "partner:pause": {
    usage: "--partner K",
    summary: "Pauses a partner: launches are denied and callbacks answered 503.",
    flags: ["partner"],
    run: (services, flags) =>
      refusalsAsUsage(() => changePartnerStatus(services, required(flags, "partner"), "paused"), PARTNER_FLAGS),
  },
  "partner:resume": {
    usage: "--partner K",
    summary: "Resumes a paused partner.",
    flags: ["partner"],
    run: (services, flags) =>
      refusalsAsUsage(() => changePartnerStatus(services, required(flags, "partner"), "active"), PARTNER_FLAGS),
  },
  "event:emit": {
    usage: `--tenant T --kind KIND --data JSON (KIND: ${EVENT_KINDS.join(", ")})`,
    summary: "Emits an event for a tenant: it is queued for the tenant's matching webhook subscriptions.",
    flags: ["tenant", "kind", "data"],
    run: async (services, flags) => {
      const tenantId = await requiredTenant(services, flags);
      const kind = required(flags, "kind");
      if (!isEventKind(kind)) throw new UsageError(`--kind must be one of ${EVENT_KINDS.join(", ")}`);
      let data: unknown;
      try {
        data = JSON.parse(required(flags, "data"));
      } catch {
        throw new UsageError("--data must be a JSON object");
      }
      if (data === null || typeof data !== "object" || Array.isArray(data))
        throw new UsageError("--data must be a JSON object");
      try {
        // The database checks the data against the kind's fields; its verdict is the usage error.
        return {
          deliveries: await services.db.transaction((trx) =>
            emitEvent(trx, tenantId, kind, data as EventDataByKind[typeof kind]),
          ),
        };
      } catch (error) {
        if ((error as { code?: string }).code === "22023")
          throw new UsageError(String((error as Error).message).replace(/^.*emit_event: /, ""));
        throw error;
      }
    },
  },
};

/**
 * Runs an operator change; a refusal by the domain is the caller's usage error, its field (the API's
 * name, which starts the message) named by this command's flag.
 */
async function refusalsAsUsage<T>(change: () => Promise<T>, flagOf: Record<string, string>): Promise<T> {
  try {
    return await change();
  } catch (error) {
    if (!(error instanceof ChangeRefused)) throw error;
    const flag = error.field === undefined ? undefined : flagOf[error.field];
    const message =
      flag !== undefined && error.field !== undefined && error.message.startsWith(error.field)
        ? `${flag}${error.message.slice(error.field.length)}`
        : error.message;
    throw new UsageError(message);
  }
}

const ITEM_FLAGS = { item_id: "--item", document_id: "--document-id", status: "--status" };
const PARTNER_FLAGS = { partner_key: "--partner" };
const PARTNER_CREATE_FLAGS = {
  partner_key: "--key",
  name: "--name",
  launch_url: "--launch-url",
  context_keys: "--context-keys",
};

async function itemChange(change: () => Promise<ItemChange>): Promise<unknown> {
  const { item, previousStatus, submission } = await refusalsAsUsage(change, ITEM_FLAGS);
  return { item, previous_status: previousStatus, submission };
}
