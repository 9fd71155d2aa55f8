// Filenames with characters that change how they read (Unicode format characters such as bidi controls,
// line and paragraph separators, fillers that render blank, look-alike slashes, padding before an
// extension, stacked combining marks, trailing dots) are refused per item like control characters, as are
// colons (Windows alternate data streams) and Windows device names; filenames are stored in NFC; mime_type
// is stored as the validated media type alone, without parameters nobody checked.
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

  // Names that read as something else than they are. Each must be refused (its item rejected) or stored in
  // a normalised form that reads as it is; none may be stored as sent.
  const spoofing: [string, string][] = [
    ["a Hangul filler (U+3164) that renders blank", "invoice\u3164.exe"],
    ["a Hangul choseong filler (U+115F)", "\u115finvoice.pdf"],
    ["a Hangul jungseong filler (U+1160)", "invoice\u1160.exe"],
    ["a halfwidth Hangul filler (U+FFA0)", "invoice\uffa0.pdf"],
    ["a braille blank (U+2800)", "report\u2800.pdf"],
    ["nothing but a filler", "\u3164"],
    ["a combining grapheme joiner (U+034F)", "invoice\u034f.pdf"],
    ["a variation selector (U+FE0F)", "invoice\ufe0f.pdf"],
    ["spaces padding a second extension", `invoice.pdf${" ".repeat(40)}.exe`],
    ["no-break spaces padding a second extension", "invoice.pdf\u00a0\u00a0\u00a0\u00a0.exe"],
    ["a space before the extension", "invoice .exe"],
    ["a leading space", " invoice.pdf"],
    ["a trailing space", "invoice.pdf "],
    ["spaces only", "   "],
    ["a trailing dot (dropped by Windows)", "invoice.exe."],
    ["trailing dots", "invoice.exe..."],
    ["stacked combining marks", "a\u0301\u0302\u0303\u0304\u0305\u0306.pdf"],
    ["a Zalgo-style stack", "Z\u0351\u036b\u0343\u036a\u0302\u036b\u033d\u0334.pdf"],
    ["decomposed (NFD) accents", "re\u0301sume\u0301.pdf"],
    ["a decomposed ring and diaeresis", "A\u030angstro\u0308m.pdf"],
    ["fullwidth solidi (U+FF0F)", "..\uff0fetc\uff0fpasswd"],
    ["a division slash (U+2215)", "docs\u2215invoice.pdf"],
    ["a fraction slash (U+2044)", "docs\u2044invoice.pdf"],
    ["a fullwidth reverse solidus (U+FF3C)", "docs\uff3cinvoice.pdf"],
    ["a big solidus (U+29F8)", "docs\u29f8invoice.pdf"],
  ];
  t.test(`${spoofing.length} spoofing names are each refused or stored normalised, never as sent`, async (t) => {
    t.equal(spoofing.length, 25);
    const items = await itemsOf(spoofing.map(([, filename]) => ({ ...pdf, filename })));
    spoofing.forEach(([what, filename], index) => {
      const item = items[index];
      if (item?.status === "rejected") {
        t.match(item.error_message, /^filename /, `${what}: rejected with a reason`);
      } else {
        t.equal(item?.status, "pending", what);
        t.not(item?.filename, filename, `${what}: not stored as sent`);
        t.equal(item?.filename, filename.normalize("NFC"), `${what}: stored in NFC`);
      }
    });
  });

  t.test("decomposed text is stored composed (NFC) and accepted", async (t) => {
    const [item] = await itemsOf([{ ...pdf, filename: "Nguye\u0302\u0303n re\u0301sume\u0301.pdf" }]);
    t.equal(item?.status, "pending");
    t.equal(item?.filename, "Nguy\u1ec5n r\u00e9sum\u00e9.pdf");
  });

  t.test("each spoofing rule says what it refuses", async (t) => {
    const items = await itemsOf([
      { ...pdf, filename: "invoice\u3164.exe" },
      { ...pdf, filename: `invoice.pdf${" ".repeat(8)}.exe` },
      { ...pdf, filename: "invoice.exe." },
      { ...pdf, filename: "o\u0331\u0332\u0333\u0334\u0335.pdf" },
      { ...pdf, filename: "docs\u2215invoice.pdf" },
      { ...pdf, filename: "   " },
    ]);
    t.match(
      items.map((item) => item.error_message),
      [/invisible|blank/, /space/, /dot/, /combining marks/, /path separator/, /blank|space/],
    );
  });

  t.test("ordinary non-ASCII filenames are accepted", async (t) => {
    const items = await itemsOf([
      { ...pdf, filename: "Zoë Ünal – Vertrag.pdf" },
      { ...pdf, filename: "契約書.pdf" },
      { ...pdf, filename: "عقد.pdf" },
      { ...pdf, filename: "契約書\u3000最終版.pdf" },
      { ...pdf, filename: "दस्तावेज़ क्षेत्र.pdf" },
      { ...pdf, filename: "བསྒྲུབས.pdf" },
      { ...pdf, filename: "Quarterly report 2026 v1.2.pdf" },
    ]);
    t.same(
      items.map((item) => item.status),
      ["pending", "pending", "pending", "pending", "pending", "pending", "pending"],
    );
  });

  t.test("a colon (a Windows alternate data stream) rejects the item, a look-alike colon too", async (t) => {
    const names = ["invoice.pdf:evil.exe", "invoice.pdf::$DATA", "report:.pdf", "invoice.pdf\uff1aevil.exe"];
    const items = await itemsOf([pdf, ...names.map((filename) => ({ ...pdf, filename }))]);
    t.equal(items[0]?.status, "pending");
    names.forEach((filename, index) => {
      t.equal(items[index + 1]?.status, "rejected", filename);
      t.match(items[index + 1]?.error_message, /^filename must not contain a colon .*alternate data stream/, filename);
    });
  });

  t.test("a Windows device name rejects the item, in any case, with or without an extension", async (t) => {
    const devices = [
      "CON.pdf",
      "NUL.txt",
      "com1",
      "LPT9.doc",
      "nul",
      "Aux.tar.gz",
      "prn.PDF",
      "COM\u00b9.pdf",
      "conin$.txt",
    ];
    const items = await itemsOf(devices.map((filename) => ({ ...pdf, filename })));
    devices.forEach((filename, index) => {
      t.equal(items[index]?.status, "rejected", filename);
      t.match(items[index]?.error_message, /^filename must not be a Windows device name/, filename);
    });
    const ordinary = [
      "CONTRACT.pdf",
      "console.pdf",
      "nullable.txt",
      "com10.pdf",
      "LPT.doc",
      "auxiliary.pdf",
      "my-con.pdf",
    ];
    const accepted = await itemsOf(ordinary.map((filename) => ({ ...pdf, filename })));
    t.same(
      accepted.map((item) => item.status),
      ordinary.map(() => "pending"),
      "names that only begin like one are accepted",
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
