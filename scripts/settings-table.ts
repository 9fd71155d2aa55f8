// The settings table of docs/operating.md, from foundation/config.ts: `npm run generate` writes it between the
// markers (and `-- --check` fails while it is stale); run alone, this prints it.
import { SETTINGS } from "../foundation/config.ts";

export function settingsTable(): string {
  const rows = Object.entries(SETTINGS).map(([name, spec]) => {
    const fallback =
      spec.fallback === undefined ? "" : spec.fallback.length > 40 ? "(see description)" : `\`${spec.fallback}\``;
    return `| \`${name}\` | ${fallback} | ${spec.description.replace(/\|/g, "\\|")} |`;
  });
  return ["| Variable | Default | Meaning |", "|---|---|---|", ...rows].join("\n");
}

/** The document that holds the settings table. */
export const SETTINGS_DOCUMENT = new URL("../docs/operating.md", import.meta.url);
const START = "<!-- settings:start -->";
const END = "<!-- settings:end -->";

export function withSettingsTable(document: string): string {
  const start = document.indexOf(START);
  const end = document.indexOf(END);
  if (start < 0 || end < start) throw new Error("docs/operating.md lacks the settings markers");
  return `${document.slice(0, start + START.length)}\n${settingsTable()}\n${document.slice(end)}`;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  process.stdout.write(`${settingsTable()}\n`);
}
