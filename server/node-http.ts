// node:http for the service's modules, without the globals Node hangs on it. Since Node 22 its exports
// include WebSocket, CloseEvent and MessageEvent as getters that load the bundled fetch implementation
// (undici, about 2.3 MiB of heap that then stays). An ESM import of a built-in module reads every export
// to build its namespace, so `import http from "node:http"` loads undici into every process;
// process.getBuiltinModule returns the module object without reading them. Nothing here uses the three.
import type * as NodeHttp from "node:http";

export const http: typeof NodeHttp = process.getBuiltinModule("node:http");
