// Prints the README's settings table from server/config.ts; `--write` puts it between the markers in README.md.
import fs from "node:fs";
import { SETTINGS } from "../server/config.ts";

export function settingsTable(): string {
  const rows = Object.entries(SETTINGS).map(([name, spec]) => {
    const fallback =
      spec.fallback === undefined ? "" : spec.fallback.length > 40 ? "(see description)" : `\`${spec.fallback}\``;
    return `| \`${name}\` | ${fallback} | ${spec.description.replace(/\|/g, "\\|")} |`;
  });
  return ["| Variable | Default | Meaning |", "|---|---|---|", ...rows].join("\n");
}

export const README = new URL("../README.md", import.meta.url);
const START = "<!-- settings:start -->";
const END = "<!-- settings:end -->";

export function readmeWithTable(readme: string): string {
  const start = readme.indexOf(START);
  const end = readme.indexOf(END);
  if (start < 0 || end < start) throw new Error("README.md lacks the settings markers");
  return `${readme.slice(0, start + START.length)}\n${settingsTable()}\n${readme.slice(end)}`;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const current = fs.readFileSync(README, "utf8");
  if (process.argv.includes("--write")) fs.writeFileSync(README, readmeWithTable(current));
  else process.stdout.write(`${settingsTable()}\n`);
}
