// Releases of the contract: one snapshot per released version, the document and the contract package at a
// version no lower than the newest, the diff a release's CHANGELOG section is drafted from (additions listed,
// a rename a removal and an addition), the bump rule, and `node scripts/contract-check-breaking.ts
// --release VERSION` run on a copy of the repository.
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import t from "tap";
import { copyRepository, editFile } from "../helpers/repository-copy.ts";
import { breakingChanges } from "../../scripts/contract-check-breaking.ts";
import { contractChanged, contractDiff, type ContractChange } from "../../scripts/contract-diff.ts";
import {
  compareVersions,
  draftSection,
  latestRelease,
  readSnapshot,
  releasedVersions,
  requiredBump,
  unreleasedProse,
  versionProblem,
  withRelease,
} from "../../scripts/contract-release.ts";
import { changelogReleases } from "../../http/changelog.ts";

// Copies the repository and regenerates in it: a minute or more on a busy machine.
t.setTimeout(600_000);

const ROOT = path.resolve(import.meta.dirname, "../..");
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- the tests edit the parsed JSON freely
type Node = Record<string, any>;
const current = (): Node => JSON.parse(fs.readFileSync(path.join(ROOT, "generated/openapi.json"), "utf8")) as Node;
const listed = (changes: ContractChange[]) =>
  changes.map(
    (change) => `${change.change} ${change.kind}: ${change.subject ? `${change.subject} ` : ""}${change.item}`,
  );

t.test("each released version has its snapshot, the first one kept", async (t) => {
  const versions = releasedVersions();
  t.ok(versions.includes("0.1.0"), "the baseline 0.1.0 is kept");
  t.same(fs.readdirSync(path.join(ROOT, "openapi/released")).sort(), versions.map((v) => `${v}.json`).sort());
  for (const version of versions) {
    const snapshot: Node = readSnapshot(version);
    t.equal(snapshot.info.version, version, `${version}.json is ${version}`);
  }
  t.same([...versions].sort(compareVersions), versions, "oldest first");
});

t.test(
  "the document, generated/ and the contract package carry one version, not below the newest release",
  async (t) => {
    const document = current();
    const manifest = JSON.parse(fs.readFileSync(path.join(ROOT, "openapi/package/package.json"), "utf8")) as Node;
    t.equal(manifest.version, document.info.version, "openapi/package/package.json's version is info.version");
    t.ok(
      compareVersions(document.info.version, latestRelease().version) >= 0,
      "info.version is at least the newest release",
    );
    if (document.info.version === latestRelease().version)
      t.same(breakingChanges(latestRelease().document, document), [], "nothing breaks the release it still names");
  },
);

t.test("every released version has its CHANGELOG section, and the sections are releases", async (t) => {
  const sections = changelogReleases(fs.readFileSync(path.join(ROOT, "CHANGELOG.md"), "utf8"));
  t.same(
    sections.map((section) => section.version).sort(compareVersions),
    releasedVersions(),
    "one section per snapshot",
  );
  t.same(
    sections.map((section) => section.version),
    [...releasedVersions()].reverse(),
    "newest first",
  );
});

t.test("the diff lists what was added", async (t) => {
  const base = current();
  const document = current();
  document.paths["/v1/reports"] = {
    get: { operationId: "listReports", responses: { "200": { description: "The reports." } } },
  };
  document.paths["/v1/webhooks/deliveries"].get.parameters.push({
    name: "since",
    in: "query",
    schema: { type: "string", format: "date-time" },
  });
  document.components.schemas.IntakeSubmissionResponse.properties.region = { type: "string" };
  document.components.schemas.WebhookEventKind.enum.push("report.ready");
  document.webhooks["report.ready"] = structuredClone(document.webhooks["scorecard.created"]);
  document.webhooks["report.ready"].post.operationId = "webhookReportReady";
  document.components.schemas.ReportReadyEventData = { type: "object", properties: { report_id: { type: "string" } } };

  const changes = contractDiff(base, document);
  t.same(listed(changes), [
    "added operations: `GET /v1/reports` (`listReports`)",
    "added event kinds: `report.ready`",
    "added parameters: `GET /v1/webhooks/deliveries` query `since`",
    "added schemas: `ReportReadyEventData`",
    "added fields: `IntakeSubmissionResponse` `region`",
    'added enum values: `WebhookEventKind` `"report.ready"`',
  ]);
  t.same(breakingChanges(base, document), [], "none of it breaks");
  t.equal(requiredBump({ breaking: [], listed: changes, changed: contractChanged(base, document) }), "minor");

  const section = draftSection({
    version: "0.3.0",
    date: "2026-12-01",
    previous: "0.2.0",
    prose: "### Added\n- Reports: `GET /v1/reports` lists them.",
    changes,
    breaking: [],
  });
  t.match(
    section,
    /^## 0\.3\.0 — 2026-12-01\n\n### Added\n- Reports: `GET \/v1\/reports` lists them\.\n\n### The document against 0\.2\.0\n/,
  );
  t.match(
    section,
    "\nAdded:\n\n- Operations:\n  - `GET /v1/reports` (`listReports`)\n- Event kinds (webhooks):\n  - `report.ready`\n",
  );
  t.match(section, "- Parameters:\n  - `GET /v1/webhooks/deliveries`: query `since`\n");
  t.match(section, "- Fields:\n  - `IntakeSubmissionResponse`: `region`\n");
  t.match(section, '- Enum values:\n  - `WebhookEventKind`: `"report.ready"`\n');
  t.notMatch(section, "Removed:");
  t.match(section, "Breaking changes against 0.2.0: none.");
});

t.test("a rename is a removal and an addition, and a major release", async (t) => {
  const base = current();
  const document = current();
  const properties = document.components.schemas.IntakeSubmissionResponse.properties;
  properties.level = properties.tier;
  delete properties.tier;
  const submissions = document.paths["/v1/intake/submissions"].get.parameters;
  const status = submissions.find((parameter: Node) => parameter.name === "status");
  status.name = "state";

  const changes = contractDiff(base, document);
  t.same(listed(changes), [
    "added parameters: `GET /v1/intake/submissions` query `state`",
    "removed parameters: `GET /v1/intake/submissions` query `status`",
    "added fields: `IntakeSubmissionResponse` `level`",
    "removed fields: `IntakeSubmissionResponse` `tier`",
  ]);
  const breaking = breakingChanges(base, document);
  t.match(breaking.join("\n"), "parameter query:status removed");
  t.match(breaking.join("\n"), "IntakeSubmissionResponse: property tier removed");
  t.equal(requiredBump({ breaking, listed: changes, changed: true }), "major");

  const section = draftSection({
    version: "1.0.0",
    date: "2026-12-01",
    previous: "0.2.0",
    prose: "",
    changes,
    breaking,
  });
  t.match(
    section,
    "\nAdded:\n\n- Parameters:\n  - `GET /v1/intake/submissions`: query `state`\n- Fields:\n  - `IntakeSubmissionResponse`: `level`\n",
  );
  t.match(
    section,
    "\nRemoved:\n\n- Parameters:\n  - `GET /v1/intake/submissions`: query `status`\n- Fields:\n  - `IntakeSubmissionResponse`: `tier`\n",
  );
  t.match(section, /Breaking changes against 0\.2\.0 \(the breaking-change check\):\n\n- .*query:status removed/);
});

t.test("the bump rule", async (t) => {
  const added: ContractChange[] = [{ change: "added", kind: "fields", subject: "`A`", item: "`b`" }];
  const bump = (breaking: string[], changes: ContractChange[], changed: boolean) =>
    requiredBump({ breaking, listed: changes, changed });
  t.equal(bump(["x removed"], [], true), "major", "anything breaking: major");
  t.equal(bump([], added, true), "minor", "anything added (or removed without breaking): minor");
  t.equal(bump([], [], true), "patch", "wording or examples alone: patch");
  t.equal(bump([], [], false), undefined, "nothing changed: nothing to release");

  t.equal(versionProblem("0.2.0", "0.3.0", "minor"), undefined);
  t.equal(versionProblem("0.2.0", "0.2.1", "patch"), undefined);
  t.equal(versionProblem("0.2.0", "1.0.0", "major"), undefined, "a breaking change in 0.x takes 1.0.0");
  t.equal(versionProblem("1.4.2", "2.0.0", "major"), undefined);
  t.equal(versionProblem("0.2.0", "1.0.0", "minor"), undefined, "1.0.0 may follow any 0.x");
  t.match(versionProblem("0.2.0", "0.3.0", "major"), "a breaking change: a major release, 1.0.0 (not 0.3.0)");
  t.match(versionProblem("1.4.2", "1.5.0", "major"), "a major release, 2.0.0 (not 1.5.0)");
  t.match(versionProblem("0.2.0", "0.2.1", "minor"), "a minor release, 0.3.0 (not 0.2.1)");
  t.match(versionProblem("0.2.0", "0.4.0", "minor"), "a minor release, 0.3.0 (not 0.4.0)", "no skipping");
  t.match(versionProblem("1.4.2", "2.0.0", "minor"), "a minor release, 1.5.0", "no major without a break after 1.0.0");
  t.match(versionProblem("0.2.0", "0.1.9", "patch"), "not above the last release");
  t.match(versionProblem("0.2.0", "0.2.0", "patch"), "not above the last release");
  t.match(versionProblem("0.2.0", "0.3.0", undefined), "nothing to release");
  for (const text of ["v0.3.0", "0.3", "0.3.0-rc.1", "00.3.0"])
    t.match(versionProblem("0.2.0", text, "minor"), "is not a version MAJOR.MINOR.PATCH", text);
});

t.test("the Unreleased prose becomes the release's section under an empty Unreleased", async (t) => {
  const changelog =
    "# Changelog\n\nIntro.\n\n## Unreleased\n\n### Added\n- A thing.\n\n## 0.1.0 — 2026-11-23\n\nFirst.\n";
  t.equal(unreleasedProse(changelog), "### Added\n- A thing.");
  const released = withRelease(changelog, "## 0.2.0 — 2026-12-01\n\n### Added\n- A thing.\n");
  t.equal(
    released,
    "# Changelog\n\nIntro.\n\n## Unreleased\n\n## 0.2.0 — 2026-12-01\n\n### Added\n- A thing.\n\n## 0.1.0 — 2026-11-23\n\nFirst.\n",
  );
  t.equal(unreleasedProse(released), "");
});

/** Runs `node scripts/contract-check-breaking.ts ARGS` in the copy. */
function breakingCheck(copy: string, args: string[]) {
  const run = spawnSync(process.execPath, [path.join(copy, "scripts/contract-check-breaking.ts"), ...args], {
    cwd: copy,
    encoding: "utf8",
  });
  return { status: run.status, output: `${run.stdout}${run.stderr}` };
}

t.test("--release VERSION on a copy of the repository", async (t) => {
  const copy = copyRepository(t, "integrator-release-");
  const read = (file: string) => fs.readFileSync(path.join(copy, file), "utf8");
  const previous = latestRelease();
  const version = JSON.parse(read("generated/openapi.json")).info.version as string;
  const [major = 0, minor = 0, patch = 0] = version.split(".").map(Number);
  const next = `${major}.${minor + 1}.0`;
  // An additive change under Unreleased, prose included.
  editFile(
    copy,
    "openapi/openapi.yaml",
    "      required: [status, checks]\n      properties:\n        status:\n",
    "      required: [status, checks]\n      properties:\n        region:\n          type: string\n          description: The region.\n        status:\n",
  );
  editFile(
    copy,
    "CHANGELOG.md",
    "## Unreleased\n",
    "## Unreleased\n\n### Added\n- The health report names its `region`.\n",
  );
  const before = new Map(
    ["openapi/openapi.yaml", "CHANGELOG.md", "openapi/package/package.json"].map((f) => [f, read(f)]),
  );

  const wrong = breakingCheck(copy, ["--release", `${major}.${minor}.${patch + 1}`]);
  t.equal(wrong.status, 1, wrong.output);
  t.match(wrong.output, `a minor release, ${next}`);
  for (const [file, text] of before) t.equal(read(file), text, `${file}: nothing written for a wrong version`);
  t.same(
    fs.readdirSync(path.join(copy, "openapi/released")).sort(),
    fs.readdirSync(path.join(ROOT, "openapi/released")).sort(),
  );

  const released = breakingCheck(copy, ["--release", next, "--date", "2026-12-24"]);
  t.equal(released.status, 0, released.output);
  t.match(released.output, `Released ${next} on 2026-12-24, a minor release after ${previous.version}`);
  const snapshot = JSON.parse(read(`openapi/released/${next}.json`)) as Node;
  t.equal(snapshot.info.version, next, "the snapshot is the new version");
  t.equal(
    read(`openapi/released/${next}.json`),
    read("generated/openapi.json"),
    "the snapshot is the bundled document",
  );
  t.ok(snapshot.components.schemas.HealthResponse.properties.region, "with the change");
  t.ok(fs.existsSync(path.join(copy, `openapi/released/${previous.version}.json`)), "the previous snapshot stays");
  t.match(
    read("openapi/openapi.yaml"),
    new RegExp(`^info:\\n(?:[ \\t].*\\n)*?  version: ${next.replaceAll(".", "\\.")}\\n`, "m"),
  );
  t.equal(JSON.parse(read("openapi/package/package.json")).version, next, "the contract package's version");

  const changelog = read("CHANGELOG.md");
  const [section] = changelogReleases(changelog);
  t.equal(section?.version, next, "the newest section");
  t.equal(section?.date, "2026-12-24");
  t.match(
    section?.body,
    /^### Added\n- The health report names its `region`\.\n[^]*\n### The document against /,
    "the prose first",
  );
  t.match(
    section?.body,
    /\n- Fields:\n(?: {2}.*\n)*? {2}- `HealthResponse`: (?:.*, )?`region`/,
    "then the drafted list",
  );
  t.equal(unreleasedProse(changelog), "", "Unreleased is empty again");

  const check = breakingCheck(copy, []);
  t.equal(check.status, 0, check.output);
  t.match(
    check.output,
    `against openapi/released/${next}.json:\nNo breaking change since ${next}.`,
    "the check compares with the new release",
  );
  const again = breakingCheck(copy, ["--release", `${major}.${minor + 1}.1`]);
  t.equal(again.status, 1, again.output);
  t.match(again.output, "nothing to release");
});
