// What `npm start` (start:api, start:worker) sets in front of `node`, from package.json's config: the heap
// sizing it gives as NODE_OPTIONS and the allocator setting it gives as GLIBC_TUNABLES (docs/operating.md,
// "Memory"). The one reader of that config for the memory benchmark and for the tests of npm start, the
// image and the allocator setting.
import fs from "node:fs";
import path from "node:path";

const MANIFEST = path.join(import.meta.dirname, "..", "package.json");

export interface ShippedStart {
  /** config.node_options. */
  nodeOptions: string;
  /** config.glibc_tunables. */
  glibcTunables: string;
}

export function shippedStart(): ShippedStart {
  const manifest = JSON.parse(fs.readFileSync(MANIFEST, "utf8")) as {
    config?: { node_options?: string; glibc_tunables?: string };
  };
  const { node_options: nodeOptions, glibc_tunables: glibcTunables } = manifest.config ?? {};
  if (!nodeOptions || !glibcTunables) throw new Error("package.json's config lacks node_options or glibc_tunables");
  return { nodeOptions, glibcTunables };
}
