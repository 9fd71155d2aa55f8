// The partner admin commands: partner:create (the callback secret shown once), partner:entitle,
// partner:pause and partner:resume, in-process and through `npm run admin`.
import t from "tap";
import { runAdminCli, runAdminCommand } from "../helpers/admin-cli.ts";
import { createTestTenant, startTestServer } from "../helpers/server.ts";
import { signCallback } from "../helpers/partners.ts";

interface CreatedPartner {
  partner_key: string;
  callback_secret: string;
  name: string;
  launch_url: string;
  context_keys: string[];
  status: string;
  created_at: string;
}

t.test("partner admin commands", async (t) => {
  const server = await startTestServer(t);

  t.test(
    "partner:create registers the partner and prints its callback secret once; the database keeps it sealed",
    async (t) => {
      const created = (await runAdminCommand(server.services, "partner:create", {
        key: "benefits-co",
        name: "Benefits Co",
        "launch-url": "https://benefits.example.com/launch",
        "context-keys": "employee_id, plan,employee_id",
      })) as CreatedPartner;
      t.match(created, {
        partner_key: "benefits-co",
        name: "Benefits Co",
        launch_url: "https://benefits.example.com/launch",
        context_keys: ["employee_id", "plan"],
        status: "active",
      });
      t.match(created.callback_secret, /^pcs_[A-Za-z0-9_-]{43}$/);
      t.match(created.created_at, /Z$/);
      const row = await server.services
        .db("integrator.partners")
        .where({ partner_key: "benefits-co" })
        .first("callback_secret_encrypted");
      t.not(row?.callback_secret_encrypted, created.callback_secret);
      t.notMatch(row?.callback_secret_encrypted, created.callback_secret.slice(4));
      t.equal(server.services.secretBox.open(row?.callback_secret_encrypted), created.callback_secret);
    },
  );

  t.test("partner:create without --context-keys registers a partner that accepts no context", async (t) => {
    const created = (await runAdminCommand(server.services, "partner:create", {
      key: "no-context",
      name: "No context",
      "launch-url": "https://nc.example.com/",
    })) as CreatedPartner;
    t.same(created.context_keys, []);
  });

  t.test(
    "partner:create refuses a taken key, a bad key, the service's own audiences (tokens, portal), a launch URL that is not https, and bad context keys",
    async (t) => {
      const base = { name: "P", "launch-url": "https://p.example.com/launch" };
      await runAdminCommand(server.services, "partner:create", { ...base, key: "taken" });
      await t.rejects(runAdminCommand(server.services, "partner:create", { ...base, key: "taken" }), {
        name: "UsageError",
        message: /exists already/,
      });
      await t.rejects(runAdminCommand(server.services, "partner:create", { ...base, key: "has space" }), {
        name: "UsageError",
        message: /--key/,
      });
      await t.rejects(runAdminCommand(server.services, "partner:create", { ...base, key: "k".repeat(65) }), {
        name: "UsageError",
        message: /--key/,
      });
      await t.rejects(
        runAdminCommand(server.services, "partner:create", { ...base, key: server.services.config.selfAudience }),
        {
          name: "UsageError",
          message: /audience/,
        },
      );
      await t.rejects(
        runAdminCommand(server.services, "partner:create", { ...base, key: "integrator-portal" }),
        { name: "UsageError", message: /audience/ },
        "nor the portal credential's audience: an assertion for that partner would be a portal credential's twin",
      );
      for (const launchUrl of [
        "http://p.example.com/launch",
        "/launch",
        "https://user:pw@p.example.com/",
        "ftp://p.example.com/",
      ]) {
        await t.rejects(
          runAdminCommand(server.services, "partner:create", { ...base, key: "url-check", "launch-url": launchUrl }),
          { name: "UsageError", message: /--launch-url/ },
          launchUrl,
        );
      }
      await t.rejects(
        runAdminCommand(server.services, "partner:create", { ...base, key: "ctx-check", "context-keys": "ok,1bad" }),
        { name: "UsageError", message: /1bad/ },
      );
      const many = Array.from({ length: 51 }, (_, i) => `k${i}`).join(",");
      await t.rejects(
        runAdminCommand(server.services, "partner:create", { ...base, key: "ctx-check", "context-keys": many }),
        {
          name: "UsageError",
          message: /at most 50/,
        },
      );
      await t.rejects(runAdminCommand(server.services, "partner:create", { name: "P", key: "no-url" }), {
        name: "UsageError",
        message: /--launch-url is required/,
      });
    },
  );

  t.test("partner:create refuses a key starting with the reserved prefix integrator-, in any case", async (t) => {
    const base = { name: "P", "launch-url": "https://p.example.com/launch" };
    for (const key of ["integrator-evil", "Integrator-API2", "INTEGRATOR-worker", "integrator-"]) {
      await t.rejects(
        runAdminCommand(server.services, "partner:create", { ...base, key }),
        {
          name: "UsageError",
          message: /^--key must not start with "integrator-" \(in any case\): the prefix is reserved/,
        },
        key,
      );
    }
    const stored = await server.services.db("integrator.partners").whereILike("partner_key", "integrator-%");
    t.same(stored, [], "none was stored");
    const created = (await runAdminCommand(server.services, "partner:create", {
      ...base,
      key: "integrator",
    })) as CreatedPartner;
    t.equal(created.partner_key, "integrator", "a key that only begins like the prefix is accepted");
    const through = await runAdminCli(server, [
      "partner:create",
      "--key",
      "integrator-evil",
      "--name",
      "E",
      "--launch-url",
      "https://e.example.com/",
    ]);
    t.not(through.code, 0, "the admin CLI exits non-zero");
    t.equal(through.stdout, "", "and prints no partner");
  });

  t.test("partner:create accepts http only for a loopback launch URL (local development)", async (t) => {
    const created = (await runAdminCommand(server.services, "partner:create", {
      key: "local-dev",
      name: "Local",
      "launch-url": "http://localhost:3000/launch",
    })) as CreatedPartner;
    t.equal(created.launch_url, "http://localhost:3000/launch");
  });

  t.test(
    "partner:entitle entitles a tenant (repeating it is harmless) and refuses unknown tenants and partners",
    async (t) => {
      const tenant = await createTestTenant(server.services);
      await runAdminCommand(server.services, "partner:create", {
        key: "entitle-me",
        name: "E",
        "launch-url": "https://e.example.com/",
      });
      t.same(
        await runAdminCommand(server.services, "partner:entitle", { tenant: tenant.tenantId, partner: "entitle-me" }),
        {
          tenant_id: tenant.tenantId,
          partner_key: "entitle-me",
          newly_entitled: true,
        },
      );
      t.same(
        await runAdminCommand(server.services, "partner:entitle", { tenant: tenant.tenantId, partner: "entitle-me" }),
        {
          tenant_id: tenant.tenantId,
          partner_key: "entitle-me",
          newly_entitled: false,
        },
      );
      const decision = await (
        await server.request("/v1/launch", { method: "POST", token: tenant.token, json: { partner_key: "entitle-me" } })
      ).json();
      t.equal(decision.decision_result, "routed", "the entitled tenant is routed");
      await t.rejects(
        runAdminCommand(server.services, "partner:entitle", { tenant: tenant.tenantId, partner: "nobody" }),
        {
          name: "UsageError",
          message: /does not exist/,
        },
      );
      await t.rejects(
        runAdminCommand(server.services, "partner:entitle", {
          tenant: "00000000-0000-4000-8000-000000000000",
          partner: "entitle-me",
        }),
        { name: "UsageError", message: /not an existing tenant/ },
      );
    },
  );

  t.test(
    "partner:pause and partner:resume switch the partner's status (denied PARTNER_PAUSED, then routed again)",
    async (t) => {
      const tenant = await createTestTenant(server.services);
      await runAdminCommand(server.services, "partner:create", {
        key: "pausable",
        name: "P",
        "launch-url": "https://pausable.example.com/",
      });
      await runAdminCommand(server.services, "partner:entitle", { tenant: tenant.tenantId, partner: "pausable" });
      const launch = async () =>
        (
          await server.request("/v1/launch", { method: "POST", token: tenant.token, json: { partner_key: "pausable" } })
        ).json();
      t.match(await runAdminCommand(server.services, "partner:pause", { partner: "pausable" }), {
        partner_key: "pausable",
        status: "paused",
      });
      t.match(await launch(), { decision_result: "denied", reason: "PARTNER_PAUSED" });
      t.match(await runAdminCommand(server.services, "partner:resume", { partner: "pausable" }), {
        partner_key: "pausable",
        status: "active",
      });
      t.match(await launch(), { decision_result: "routed" });
      await t.rejects(runAdminCommand(server.services, "partner:pause", { partner: "nobody" }), {
        name: "UsageError",
        message: /does not exist/,
      });
      await t.rejects(runAdminCommand(server.services, "partner:resume", { partner: "nobody" }), {
        name: "UsageError",
        message: /does not exist/,
      });
    },
  );

  t.test(
    "npm run admin -- partner:create prints JSON with the secret, which then signs callbacks the service accepts",
    async (t) => {
      const tenant = await createTestTenant(server.services);
      const output = await runAdminCli(server, [
        "partner:create",
        "--key",
        "cli-partner",
        "--name",
        "CLI partner",
        "--launch-url",
        "https://cli.example.com/launch",
        "--context-keys",
        "a,b",
      ]);
      t.equal(output.code, 0);
      const created = JSON.parse(output.stdout) as CreatedPartner;
      t.match(created, { partner_key: "cli-partner", context_keys: ["a", "b"], status: "active" });
      await runAdminCommand(server.services, "partner:entitle", { tenant: tenant.tenantId, partner: "cli-partner" });
      const body = { tenant_id: tenant.tenantId, payload: { event: "hello" } };
      const res = await server.request("/v1/callbacks/partner/cli-partner", {
        method: "POST",
        json: body,
        headers: { "X-Callback-Signature": signCallback(created.callback_secret, "cli-partner", body) },
      });
      t.equal(res.status, 202);
    },
  );
});
