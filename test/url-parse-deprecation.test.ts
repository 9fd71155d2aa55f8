// express-openapi-validator parses every request's URL with Node's legacy url.parse(). Until Node has
// reported that function's deprecation (DEP0169) once, every call walks the stack in search of a caller
// outside node_modules, and a caller inside node_modules never gets it reported: 7.5 µs a call instead of
// 0.6, 3–4 % of a submit's Node CPU (BENCHMARKS.md, ninth session). The service reports it, silenced, when
// it builds its app. What that leaves is checked here: nothing printed, and no later call warns.
// eslint-disable-next-line no-restricted-imports -- the later call whose silence is checked
import { parse } from "node:url";
import t from "tap";
import { startApiService } from "./helpers/service.ts";

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
