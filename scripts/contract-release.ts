// Released versions of the document and what a release writes. Each release is a snapshot,
// openapi/released/<version>.json (the bundled document as that version published it); the newest is what
// the breaking-change check compares the document with. Versions are semantic (MAJOR.MINOR.PATCH, no
// pre-release tags) and a release takes the bump its changes call for (docs/decisions.md, "Publishing the
// contract"): a breaking change the next major, anything added or removed the next minor, a change of
// wording or examples alone the next patch; 1.0.0 may follow any 0.x. The release command itself is
// `node scripts/contract-check-breaking.ts --release VERSION` (it runs the check, which this module does not).
import fs from "node:fs";
import path from "node:path";
import { DIFF_KINDS, type ContractChange, type DiffKind } from "./contract-diff.ts";
import { ROOT, type DocumentNode } from "./openapi-source.ts";

export const RELEASED_DIR = "openapi/released";
export const CHANGELOG = "CHANGELOG.md";

export interface Version {
  major: number;
  minor: number;
  patch: number;
}

/** A plain semantic version ("1.2.3"), or undefined. */
export function parseVersion(text: string): Version | undefined {
  const match = /^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)$/.exec(text);
  if (!match) return undefined;
  return { major: Number(match[1]), minor: Number(match[2]), patch: Number(match[3]) };
}

function versionOf(text: string): Version {
  const version = parseVersion(text);
  if (!version) throw new Error(`${JSON.stringify(text)} is not a version MAJOR.MINOR.PATCH (e.g. 1.4.0)`);
  return version;
}

export function compareVersions(a: string, b: string): number {
  const [x, y] = [versionOf(a), versionOf(b)];
  return x.major - y.major || x.minor - y.minor || x.patch - y.patch;
}

/** The released versions, oldest first, from the snapshots' names. */
export function releasedVersions(root = ROOT): string[] {
  const names = fs.readdirSync(path.join(root, RELEASED_DIR)).filter((name) => name.endsWith(".json"));
  const versions = names.map((name) => name.slice(0, -".json".length));
  const stray = versions.filter((version) => !parseVersion(version));
  if (stray.length > 0)
    throw new Error(
      `${RELEASED_DIR}/ holds only <version>.json snapshots; not: ${stray.map((v) => `${v}.json`).join(", ")}`,
    );
  return versions.sort(compareVersions);
}

export const snapshotFile = (version: string) => `${RELEASED_DIR}/${version}.json`;

export function readSnapshot(version: string, root = ROOT): DocumentNode {
  return JSON.parse(fs.readFileSync(path.join(root, snapshotFile(version)), "utf8")) as DocumentNode;
}

/** The newest release: what the breaking-change check compares the document with. */
export function latestRelease(root = ROOT): { version: string; file: string; document: DocumentNode } {
  const version = releasedVersions(root).at(-1);
  if (!version) throw new Error(`${RELEASED_DIR}/ holds no released version`);
  return { version, file: snapshotFile(version), document: readSnapshot(version, root) };
}

export type Bump = "major" | "minor" | "patch";

/** The bump the changes since the last release call for; undefined when nothing but info.version changed. */
export function requiredBump(changes: {
  breaking: readonly string[];
  listed: readonly ContractChange[];
  changed: boolean;
}): Bump | undefined {
  if (changes.breaking.length > 0) return "major";
  if (changes.listed.length > 0) return "minor";
  return changes.changed ? "patch" : undefined;
}

export function bumped(version: string, bump: Bump): string {
  const { major, minor, patch } = versionOf(version);
  if (bump === "major") return `${major + 1}.0.0`;
  if (bump === "minor") return `${major}.${minor + 1}.0`;
  return `${major}.${minor}.${patch + 1}`;
}

/** Why `next` is not the version to release after `previous` with these changes; undefined when it is. */
export function versionProblem(previous: string, next: string, required: Bump | undefined): string | undefined {
  if (!parseVersion(next)) return `${JSON.stringify(next)} is not a version MAJOR.MINOR.PATCH (e.g. 1.4.0)`;
  if (compareVersions(next, previous) <= 0) return `${next} is not above the last release, ${previous}`;
  if (required === undefined)
    return `the document is the released ${previous} but for info.version: there is nothing to release`;
  const expected = bumped(previous, required);
  if (next === expected) return undefined;
  // The first stable version is a promise, not a consequence of a diff: it may follow any 0.x.
  if (next === "1.0.0" && versionOf(previous).major === 0) return undefined;
  const reason = {
    major: "a breaking change",
    minor: "additions (or removals that break nothing)",
    patch: "changes of wording or examples alone",
  }[required];
  return `the changes since ${previous} are ${reason}: a ${required} release, ${expected} (not ${next})`;
}

const LABELS: Record<DiffKind, string> = {
  operations: "Operations",
  "event kinds": "Event kinds (webhooks)",
  operationIds: "operationIds",
  parameters: "Parameters",
  "request bodies": "Request bodies",
  "response statuses": "Response statuses",
  "response headers": "Response headers",
  schemas: "Schemas",
  fields: "Fields",
  "enum values": "Enum values",
  "security schemes": "Security schemes and OAuth2 flows",
};

/**
 * Markdown list lines: `- first line` wrapped at `width` (never inside a code span), continuation lines
 * indented under the text.
 */
function bullet(text: string, indent: string, width = 110): string[] {
  const lines: string[] = [];
  let line = `${indent}- `;
  for (const word of text.match(/(?:`[^`]*`|[^\s`])+/g) ?? []) {
    if (line.length + word.length > width && line.trim() !== "-") {
      lines.push(line.trimEnd());
      line = `${indent}  `;
    }
    line += `${word} `;
  }
  lines.push(line.trimEnd());
  return lines;
}

/** One change direction ("added"/"removed") as a list: a line per kind, or per subject with the same items. */
function changeList(changes: readonly ContractChange[]): string[] {
  const lines: string[] = [];
  for (const kind of DIFF_KINDS) {
    const ofKind = changes.filter((change) => change.kind === kind);
    if (ofKind.length === 0) continue;
    const subjects = [...new Set(ofKind.map((change) => change.subject))];
    if (subjects.length === 1 && subjects[0] === "") {
      // Operations and event kinds one a line; shorter names on one.
      if (kind === "operations" || kind === "event kinds")
        lines.push(`- ${LABELS[kind]}:`, ...ofKind.flatMap((change) => bullet(change.item, "  ")));
      else lines.push(...bullet(`${LABELS[kind]}: ${ofKind.map((change) => change.item).join(", ")}.`, ""));
      continue;
    }
    lines.push(`- ${LABELS[kind]}:`);
    // Subjects that gained (or lost) the same items share a line: the headers of every webhook, say.
    const bySameItems = new Map<string, string[]>();
    for (const subject of subjects) {
      const items = ofKind.filter((change) => change.subject === subject).map((change) => change.item);
      const key = items.join(", ");
      bySameItems.set(key, [...(bySameItems.get(key) ?? []), subject]);
    }
    for (const [items, sharing] of bySameItems) lines.push(...bullet(`${sharing.join(", ")}: ${items}`, "  "));
  }
  return lines;
}

/**
 * The CHANGELOG section of a release: the hand-written prose (what stood under "Unreleased"), then what the
 * document gained and lost against the previous release, listed from the diff, and the breaking-change
 * check's findings.
 */
export function draftSection(options: {
  version: string;
  date: string;
  previous: string;
  prose: string;
  changes: readonly ContractChange[];
  breaking: readonly string[];
}): string {
  const { version, date, previous, prose, changes, breaking } = options;
  const added = changes.filter((change) => change.change === "added");
  const removed = changes.filter((change) => change.change === "removed");
  const lines = [`## ${version} — ${date}`, ""];
  if (prose.trim() !== "") lines.push(prose.trim(), "");
  lines.push(
    `### The document against ${previous}`,
    "",
    `Drafted from the difference between \`${snapshotFile(previous)}\` and \`${snapshotFile(version)}\` by`,
    `\`node scripts/contract-check-breaking.ts --release ${version}\`; a rename is a removal and an addition.`,
    "",
  );
  if (added.length > 0) lines.push("Added:", "", ...changeList(added), "");
  if (removed.length > 0) lines.push("Removed:", "", ...changeList(removed), "");
  if (added.length === 0 && removed.length === 0)
    lines.push("Nothing added or removed: descriptions and examples only.", "");
  if (breaking.length === 0) lines.push(`Breaking changes against ${previous}: none.`, "");
  else
    lines.push(
      `Breaking changes against ${previous} (the breaking-change check):`,
      "",
      ...breaking.flatMap((change) => bullet(change, "")),
      "",
    );
  return `${lines.join("\n").trimEnd()}\n`;
}

const UNRELEASED_HEADING = "## Unreleased";

/** The "Unreleased" section of the CHANGELOG's text: where it starts and ends, and its prose. */
function unreleasedSection(changelog: string): { start: number; end: number; prose: string } {
  const heading = changelog.indexOf(`\n${UNRELEASED_HEADING}\n`);
  if (heading === -1) throw new Error(`${CHANGELOG} has no "${UNRELEASED_HEADING}" section`);
  const start = heading + 1;
  const bodyStart = start + UNRELEASED_HEADING.length + 1;
  const next = changelog.indexOf("\n## ", bodyStart - 1);
  const end = next === -1 ? changelog.length : next + 1;
  return { start, end, prose: changelog.slice(bodyStart, end).trim() };
}

export const unreleasedProse = (changelog: string): string => unreleasedSection(changelog).prose;

/** The CHANGELOG with the release's section in place of the Unreleased prose, under an empty "Unreleased". */
export function withRelease(changelog: string, section: string): string {
  const { start, end } = unreleasedSection(changelog);
  return `${changelog.slice(0, start)}${UNRELEASED_HEADING}\n\n${section}\n${changelog.slice(end)}`;
}
