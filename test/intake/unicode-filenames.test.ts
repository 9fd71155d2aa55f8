// Filenames with characters that change how they read (Unicode format characters such as bidi controls,
// line and paragraph separators) are refused per item like control characters; mime_type is stored as
// the validated media type alone, without parameters nobody checked.
import t from "tap";
import { createTestTenant, startTestServer } from "../helpers/server.ts";

const pdf = { filename: "contract.pdf", file_size: 48213, mime_type: "application/pdf" };

interface Item {
  filename: string;
  mime_type: string;
  status: string;
  error_message: string | null;
}

t.test("intake filename and mime_type rules", async (t) => {
  const server = await startTestServer(t);
  const tenant = await createTestTenant(server.services);
  const itemsOf = async (items: Record<string, unknown>[]): Promise<Item[]> => {
    const res = await server.request("/v1/intake/batch", { method: "POST", token: tenant.token, json: { items } });
    t.equal(res.status, 201);
    const { id } = (await res.json()) as { id: string };
    const detail = await server.request(`/v1/intake/submissions/${id}`, { token: tenant.token });
    return ((await detail.json()) as { items: Item[] }).items;
  };

  const refused: [string, string][] = [
    ["a right-to-left override (U+202E, Cf)", "invoice\u202efdp.exe"],
    ["a left-to-right isolate (U+2066, Cf)", "a\u2066b.pdf"],
    ["a zero-width space (U+200B, Cf)", "a\u200bb.pdf"],
    ["a byte order mark (U+FEFF, Cf)", "\ufeffa.pdf"],
    ["a line separator (U+2028, Zl)", "a\u2028b.pdf"],
    ["a paragraph separator (U+2029, Zp)", "a\u2029b.pdf"],
    ["a C1 control character (U+0085)", "a\u0085b.pdf"],
  ];
  for (const [what, filename] of refused) {
    t.test(`a filename with ${what} rejects the item with an error_message`, async (t) => {
      const [good, bad] = await itemsOf([pdf, { ...pdf, filename }]);
      t.equal(good?.status, "pending");
      t.equal(bad?.status, "rejected");
      t.match(bad?.error_message, /Unicode format characters|control characters/);
    });
  }

  t.test("ordinary non-ASCII filenames are accepted", async (t) => {
    const items = await itemsOf([
      { ...pdf, filename: "Zoë Ünal – Vertrag.pdf" },
      { ...pdf, filename: "契約書.pdf" },
      { ...pdf, filename: "عقد.pdf" },
    ]);
    t.same(
      items.map((item) => item.status),
      ["pending", "pending", "pending"],
    );
  });

  t.test("mime_type is stored as the media type alone, without its parameters", async (t) => {
    const [item] = await itemsOf([{ ...pdf, mime_type: "Application/PDF; charset=\u202ebinary; x=\u2028y" }]);
    t.equal(item?.status, "pending");
    t.equal(item?.mime_type, "application/pdf");
  });

  t.test("a mime_type that is not a media type rejects the item", async (t) => {
    const [item] = await itemsOf([{ ...pdf, mime_type: "application/pdf\u202e" }, pdf]);
    t.equal(item?.status, "rejected");
    t.match(item?.error_message, /media type/);
  });
});
