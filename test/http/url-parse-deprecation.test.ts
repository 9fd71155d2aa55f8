// The service settles url.parse()'s deprecation check (DEP0169) when it builds its app; why is told at
// settleLegacyUrlParseDeprecation in http/app.ts. What that leaves is checked here: nothing
// printed, and no later call warns.
// eslint-disable-next-line no-restricted-imports -- the later call whose silence is checked
import { parse } from "node:url";
import t from "tap";
import { startApiService } from "../helpers/service.ts";

t.test("building the app settles url.parse's deprecation without printing it", async (t) => {
  const warnings: Error[] = [];
  const collect = (warning: Error) => warnings.push(warning);
  process.on("warning", collect);
  t.teardown(() => process.off("warning", collect));

  const { baseUrl } = await startApiService(t);
  t.equal((await fetch(`${baseUrl}/v1/health`)).status, 200, "the service answers");
  parse("/v1/intake/submissions?limit=1");
  await new Promise((resolve) => setImmediate(resolve));

  t.same(
    warnings.filter((warning) => (warning as Error & { code?: string }).code === "DEP0169"),
    [],
    "no DEP0169 warning, at start or afterwards",
  );
  t.equal(process.noDeprecation, undefined, "other deprecations are still reported");
});
