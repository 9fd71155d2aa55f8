// Ids made in the application are RFC 9562 version 7 UUIDs: the time in their first 48 bits, the
// version and variant in place, and random bits that do not repeat.
import t from "tap";
import { isUuid, uuidV7 } from "../../db/ids.ts";

t.test("uuidV7 carries its millisecond time, version 7 and the RFC 9562 variant", async (t) => {
  const now = Date.UTC(2026, 10, 23, 17, 0, 0, 123);
  const id = uuidV7(now);
  t.ok(isUuid(id));
  t.equal(parseInt(id.slice(0, 8) + id.slice(9, 13), 16), now, "the first 48 bits are the time");
  t.equal(id[14], "7", "version 7");
  t.match(id[19], /[89ab]/, "variant 10");
  t.equal(uuidV7(0).slice(0, 13), "00000000-0000", "the time is zero-padded");
});

t.test("uuidV7 ids sort by time and do not repeat", async (t) => {
  const ids = Array.from({ length: 20_000 }, (_, i) => uuidV7(1_700_000_000_000 + Math.floor(i / 100)));
  t.equal(new Set(ids).size, ids.length, "no two of 20 000 are equal");
  const byTime = ids.filter((_, i) => i % 100 === 0);
  t.same([...byTime].sort(), byTime, "ids of later milliseconds sort after earlier ones");
});

t.test("uuidV7's random bits cover every value in every place, across refills of its random pool", async (t) => {
  const ids = Array.from({ length: 4_000 }, () => uuidV7(1_700_000_000_000));
  const randomPlaces = [15, 16, 17, 20, 21, 22, ...Array.from({ length: 12 }, (_, i) => 24 + i)];
  for (const place of randomPlaces)
    t.equal(new Set(ids.map((id) => id[place])).size, 16, `place ${place} takes all 16 hex digits`);
  t.same([...new Set(ids.map((id) => id[19]))].sort(), ["8", "9", "a", "b"], "the variant's two random bits");
  t.ok(
    ids.every((id) => id.startsWith("018bcfe5-6800-7")),
    "the time and the version in every id",
  );
});
