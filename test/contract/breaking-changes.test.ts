// node scripts/contract-check-breaking.ts: the document against the last released one (the newest openapi/released/<version>.json).
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import t from "tap";
import { tempDir } from "../helpers/temp-dir.ts";
import { checkBreaking } from "../../scripts/contract-check-breaking.ts";
import { latestRelease } from "../../scripts/contract-release.ts";

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- the tests edit the parsed JSON freely
type Node = Record<string, any>;
const read = (file: string): Node => JSON.parse(fs.readFileSync(new URL(file, import.meta.url), "utf8"));
const released = () => latestRelease().document;
const current = () => read("../../generated/openapi.json");

t.test("the document breaks nothing of the released one (CI runs this through npm)", async (t) => {
  const output = execFileSync(
    process.execPath,
    [path.join(import.meta.dirname, "../../scripts/contract-check-breaking.ts")],
    {
      encoding: "utf8",
    },
  );
  t.match(output, /No breaking change since \d+\.\d+\.\d+/);
});

const breaks: [string, (document: Node) => void, RegExp][] = [
  ["an operation removed", (d) => delete d.paths["/v1/intake/batch"], /POST \/v1\/intake\/batch: operation removed/],
  [
    "a request property made required",
    (d) => d.components.schemas.IntakeSubmitRequest.required.push("module"),
    /IntakeSubmitRequest: property module is now required in requests/,
  ],
  [
    "a response property removed",
    (d) => delete d.components.schemas.IntakeSubmissionResponse.properties.tier,
    /IntakeSubmissionResponse: property tier removed/,
  ],
  [
    "a required parameter added",
    (d) =>
      d.paths["/v1/webhooks/deliveries"].get.parameters.push({
        name: "since",
        in: "query",
        required: true,
        schema: { type: "string" },
      }),
    /GET \/v1\/webhooks\/deliveries: parameter query:since is added as required/,
  ],
  [
    "an OAuth2 flow removed",
    (d) => delete d.components.securitySchemes.OAuth2PasswordBearer.flows.password,
    /flow password removed/,
  ],
  [
    "an event kind removed from what may be subscribed",
    (d) => (d.components.schemas.WebhookEventSelector.enum = d.components.schemas.WebhookEventSelector.enum.slice(1)),
    /WebhookEventSelector: enum value "document.status_changed" removed/,
  ],
  [
    "an enum put on a request string that accepted any value",
    (d) => (d.components.schemas.LaunchRequest.properties.partner_key.enum = ["benefits-co"]),
    /LaunchRequest\.partner_key: a string that accepted any value is now restricted \(enum or const added\) \(used by startLaunch\)/,
  ],
  [
    "an enum put on a query parameter that accepted any string",
    (d) => {
      const cursor = d.paths["/v1/webhooks/deliveries"].get.parameters.find((p: Node) => p.name === "cursor");
      cursor.schema.enum = ["first"];
    },
    /GET \/v1\/webhooks\/deliveries: parameter query:cursor: a string that accepted any value is now restricted \(listWebhookDeliveries\)/,
  ],
];

for (const [name, mutate, expected] of breaks) {
  t.test(`${name} fails the check unless the major version grows`, async (t) => {
    const document = current();
    mutate(document);
    const verdict = checkBreaking(released(), document);
    t.equal(verdict.ok, false);
    t.match(verdict.changes.join("\n"), expected);
    document.info.version = "1.0.0";
    t.equal(checkBreaking(released(), document).ok, true, "allowed in 1.0.0");
  });
}

t.test("the command exits 1 on a breaking change", async (t) => {
  const directory = tempDir(t, "breaking-");
  const document = current();
  delete document.paths["/v1/readyz"];
  fs.writeFileSync(path.join(directory, "openapi.json"), JSON.stringify(document));
  const script = path.join(import.meta.dirname, "../../scripts/contract-check-breaking.ts");
  t.throws(
    () =>
      execFileSync(process.execPath, [script, "--current", path.join(directory, "openapi.json")], { stdio: "pipe" }),
    { status: 1 } as never,
  );
});

t.test("additions are not breaking", async (t) => {
  const document = current();
  document.paths["/v1/extra"] = { get: { operationId: "getExtra", responses: { "200": { description: "ok" } } } };
  document.components.schemas.IntakeSubmissionResponse.properties.extra = { type: "string" };
  document.components.schemas.WebhookSubscriptionResponse.properties.created_by.enum = ["someone"];
  t.equal(checkBreaking(released(), document).ok, true, "an enum on a response field narrows only what is promised");
});

t.test("a webhook is sent by the service: a header it adds is not breaking, a header it drops is", async (t) => {
  const webhook = (document: ReturnType<typeof current>) => document.webhooks["intake.submitted"].post;
  const added = current();
  webhook(added).parameters = [
    ...(webhook(added).parameters ?? []),
    { name: "x-extra-header", in: "header", required: true, schema: { type: "string" } },
  ];
  t.equal(checkBreaking(released(), added).ok, true, "receivers get one header more");
  const base = current();
  const dropped = current();
  webhook(dropped).parameters = (webhook(dropped).parameters ?? []).slice(1);
  t.equal(checkBreaking(base, dropped).ok, false, "receivers lose a header they may rely on");
});
