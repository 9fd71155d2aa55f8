// The contract's changelog as integrators read it beside the reference page: the released versions of
// CHANGELOG.md (each "## <version> — <date>" section; "Unreleased" is not published) as an HTML page and as
// an Atom feed (RFC 4287) a feed reader subscribes to. Served at /docs/changelog and
// /docs/changelog.atom (http/api-docs.ts) and written into the static reference site by `npm run build`.
//
// CHANGELOG.md is written in a small part of Markdown and rendered here by that part alone: headings
// (###, ####), paragraphs, lists (nested by two spaces, an item's lines continued under its text), `code`,
// **strong**, *emphasis* and [links](https://…); a link to a file of the repository keeps its text only (the
// site does not serve the repository). Everything else is text, escaped.
import { createHash } from "node:crypto";

export interface ChangelogRelease {
  version: string;
  /** YYYY-MM-DD */
  date: string;
  /** What the heading says after the date, e.g. "(baseline)". */
  note: string;
  /** The section's Markdown, its heading left out. */
  body: string;
}

const RELEASE_HEADING = /^## (\d+\.\d+\.\d+) — (\d{4}-\d{2}-\d{2})(.*)$/;

/** The released sections of the CHANGELOG, newest first (as written). */
export function changelogReleases(markdown: string): ChangelogRelease[] {
  const releases: ChangelogRelease[] = [];
  let current: { release: ChangelogRelease; lines: string[] } | undefined;
  const close = () => {
    if (current) releases.push({ ...current.release, body: current.lines.join("\n").trim() });
    current = undefined;
  };
  for (const line of markdown.split("\n")) {
    if (line.startsWith("## ")) {
      close();
      const match = RELEASE_HEADING.exec(line);
      if (match)
        current = {
          release: { version: match[1] ?? "", date: match[2] ?? "", note: (match[3] ?? "").trim(), body: "" },
          lines: [],
        };
    } else current?.lines.push(line);
  }
  close();
  return releases;
}

export const escapeHtml = (text: string): string =>
  text.replace(/[&<>"']/g, (character) => `&#${character.charCodeAt(0)};`);

/** One line's inline Markdown: code spans first (nothing inside them is Markdown), then strong, emphasis, links. */
function inline(text: string): string {
  return text
    .split(/(`[^`]*`)/)
    .map((part) => {
      if (part.length > 1 && part.startsWith("`") && part.endsWith("`"))
        return `<code>${escapeHtml(part.slice(1, -1))}</code>`;
      return escapeHtml(part)
        .replace(/\*\*(\S(?:.*?\S)?)\*\*/g, "<strong>$1</strong>")
        .replace(/(^|[\s(])\*(\S(?:.*?\S)?)\*(?=[\s).,;:]|$)/g, "$1<em>$2</em>")
        .replace(/\[([^\]]+)\]\(([^)\s]+)\)/g, (_whole, label: string, target: string) =>
          /^(https?:\/\/|#)/.test(target) ? `<a href="${target}">${label}</a>` : label,
        );
    })
    .join("");
}

/** The Markdown of a CHANGELOG section as HTML (see the top of this file for what it reads). */
export function markdownToHtml(markdown: string): string {
  const html: string[] = [];
  let paragraph: string[] = [];
  /** The indents of the open lists, innermost last; the innermost list's last item is open. */
  const lists: number[] = [];
  let item: string[] = [];

  const flushParagraph = () => {
    if (paragraph.length > 0) html.push(`<p>${inline(paragraph.join(" "))}</p>`);
    paragraph = [];
  };
  const flushItem = () => {
    if (item.length > 0) html.push(inline(item.join(" ")));
    item = [];
  };
  /** Ends the open item and closes the lists nested deeper than `indent` (all of them by default). */
  const closeLists = (indent = -1) => {
    flushItem();
    while ((lists.at(-1) ?? -1) > indent) {
      html.push("</li>", "</ul>");
      lists.pop();
    }
  };

  for (const raw of markdown.split("\n")) {
    const text = raw.trim();
    const indent = raw.length - raw.trimStart().length;
    const heading = /^(#{3,6}) (.*)$/.exec(text);
    const listItem = /^[-*] (.*)$/.exec(text);
    if (text === "") {
      flushParagraph();
      closeLists();
    } else if (heading && indent === 0) {
      flushParagraph();
      closeLists();
      const level = (heading[1] ?? "").length;
      html.push(`<h${level}>${inline(heading[2] ?? "")}</h${level}>`);
    } else if (listItem) {
      flushParagraph();
      closeLists(indent);
      if ((lists.at(-1) ?? -1) < indent) {
        html.push("<ul>");
        lists.push(indent);
      } else html.push("</li>");
      html.push("<li>");
      item = [listItem[1] ?? ""];
    } else if (lists.length > 0 && indent > 0) item.push(text);
    else {
      closeLists();
      paragraph.push(text);
    }
  }
  flushParagraph();
  closeLists();
  return html.join("\n");
}

/** The anchor of a release on the changelog page. */
export const releaseAnchor = (version: string): string => `v${version}`;

export interface ChangelogLinks {
  /** The document's title, e.g. "Integrator API". */
  title: string;
  /** Where the page is, where its feed is, and the reference page: as the page and the feed link them. */
  pageUrl: string;
  feedUrl: string;
  referenceUrl: string;
}

export function changelogPageHtml(releases: readonly ChangelogRelease[], links: ChangelogLinks): string {
  const sections = releases.map(
    (release) => `<section id="${releaseAnchor(release.version)}">
<h2>${escapeHtml(release.version)} <small>${escapeHtml(release.date)}${release.note ? ` ${escapeHtml(release.note)}` : ""}</small></h2>
${markdownToHtml(release.body)}
</section>`,
  );
  return `<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8" />
    <meta name="viewport" content="width=device-width, initial-scale=1" />
    <link rel="icon" href="data:," />
    <link rel="alternate" type="application/atom+xml" title="${escapeHtml(links.title)} changelog" href="${escapeHtml(links.feedUrl)}" />
    <title>${escapeHtml(links.title)} changelog</title>
    <style>
      body { font: 16px/1.5 system-ui, sans-serif; margin: 0 auto; padding: 1rem; max-width: 52rem; color: #1b1b1b; }
      code { font-size: 0.9em; background: #f2f2f2; padding: 0 0.2em; border-radius: 3px; overflow-wrap: anywhere; }
      h2 { border-top: 1px solid #ddd; padding-top: 1rem; }
      h2 small { font-weight: normal; color: dimgray; }
      nav a { margin-right: 1rem; }
    </style>
  </head>
  <body>
    <main>
      <h1>${escapeHtml(links.title)} changelog</h1>
      <nav><a href="${escapeHtml(links.referenceUrl)}">API reference</a><a href="${escapeHtml(links.feedUrl)}">Atom feed</a></nav>
      <p>Each release of the contract: its version (<code>info.version</code>, semantic versioning), its date and what changed for integrators.</p>
${sections.join("\n")}
    </main>
  </body>
</html>
`;
}

/**
 * A name-based UUID (RFC 9562 version 5): the same name always gives the same id, so an entry keeps its id
 * wherever the feed is served from.
 */
function nameBasedUuid(namespace: string, name: string): string {
  const hash = createHash("sha1")
    .update(Buffer.from(namespace.replaceAll("-", ""), "hex"))
    .update(name)
    .digest();
  hash[6] = ((hash[6] ?? 0) & 0x0f) | 0x50;
  hash[8] = ((hash[8] ?? 0) & 0x3f) | 0x80;
  const hex = hash.subarray(0, 16).toString("hex");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** The feed's id, fixed for good (feed readers know a feed by it); each entry's id is derived from it. */
const FEED_UUID = "3f0c7d5e-8a41-4c36-9e57-2b6d1f4a9c80";

export function changelogFeed(releases: readonly ChangelogRelease[], links: ChangelogLinks): string {
  const updated = (release: ChangelogRelease) => `${release.date}T00:00:00Z`;
  const latest = [...releases].sort((a, b) => (a.date < b.date ? 1 : a.date > b.date ? -1 : 0))[0];
  const entries = releases.map(
    (release) => `  <entry>
    <id>urn:uuid:${nameBasedUuid(FEED_UUID, release.version)}</id>
    <title>${escapeHtml(`${links.title} ${release.version}`)}</title>
    <updated>${updated(release)}</updated>
    <link rel="alternate" type="text/html" href="${escapeHtml(`${links.pageUrl}#${releaseAnchor(release.version)}`)}"/>
    <content type="html">${escapeHtml(markdownToHtml(release.body))}</content>
  </entry>`,
  );
  return `<?xml version="1.0" encoding="utf-8"?>
<feed xmlns="http://www.w3.org/2005/Atom">
  <id>urn:uuid:${FEED_UUID}</id>
  <title>${escapeHtml(links.title)} changelog</title>
  <subtitle>Releases of the ${escapeHtml(links.title)} contract: what changed for integrators.</subtitle>
  <updated>${latest ? updated(latest) : "1970-01-01T00:00:00Z"}</updated>
  <author><name>${escapeHtml(links.title)}</name></author>
  <link rel="self" type="application/atom+xml" href="${escapeHtml(links.feedUrl)}"/>
  <link rel="alternate" type="text/html" href="${escapeHtml(links.pageUrl)}"/>
${entries.join("\n")}
</feed>
`;
}
