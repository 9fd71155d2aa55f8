// The document's prose reaches integrators' generated code: generators paste descriptions and summaries into
// JSDoc comments, string literals and template literals (openapi-zod-client writes each operation's
// description into a template literal, where `\u` must start an escape and `${` a placeholder). So the prose
// holds nothing those read as code: no backslash, no `${`, no `*/`. Characters are named in words (U+0000).
import fs from "node:fs";
import path from "node:path";
import t from "tap";
import { ROOT } from "../../scripts/contract-package.ts";

const PROSE_KEYS = new Set(["description", "summary", "title"]);
const HAZARDS: readonly { text: string; why: string }[] = [
  { text: "\\", why: "a backslash starts an escape in a string or template literal (`\\u` must be one)" },
  { text: "${", why: "starts a placeholder in a template literal" },
  { text: "*/", why: "ends a JSDoc comment" },
];

/** Every description, summary and title of the document that holds a hazard, by JSON pointer. */
function proseHazards(document: unknown): string[] {
  const found: string[] = [];
  const visit = (node: unknown, pointer: string): void => {
    if (Array.isArray(node)) return node.forEach((item, index) => visit(item, `${pointer}/${index}`));
    if (typeof node !== "object" || node === null) return;
    for (const [key, value] of Object.entries(node)) {
      const at = `${pointer}/${key.replace(/~/g, "~0").replace(/\//g, "~1")}`;
      if (typeof value === "string" && PROSE_KEYS.has(key))
        for (const hazard of HAZARDS)
          if (value.includes(hazard.text)) found.push(`${at}: ${JSON.stringify(hazard.text)} ${hazard.why}`);
      visit(value, at);
    }
  };
  visit(document, "#");
  return found;
}

t.test("the document's descriptions, summaries and titles hold no backslash, `${` or `*/`", async (t) => {
  const document: unknown = JSON.parse(fs.readFileSync(path.join(ROOT, "generated/openapi.json"), "utf8"));
  t.same(proseHazards(document), []);
});

t.test("the check finds each hazard, and reads prose only", async (t) => {
  const document = {
    info: { description: "A NUL (`\\u0000`) is refused." },
    paths: {
      "/a/{b}": { get: { summary: "costs ${price}", description: "ends a comment */ early" } },
    },
    components: {
      schemas: {
        Text: { type: "string", pattern: "^[^\\p{Cc}]*$", title: "Text", examples: ["a\\u0001b"] },
        Named: { type: "object", properties: { description: { type: "string" } } },
      },
    },
  };
  t.same(proseHazards(document), [
    `#/info/description: "\\\\" ${HAZARDS[0]?.why}`,
    `#/paths/~1a~1{b}/get/summary: "\${" ${HAZARDS[1]?.why}`,
    `#/paths/~1a~1{b}/get/description: "*/" ${HAZARDS[2]?.why}`,
  ]);
});
