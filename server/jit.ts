// How soon V8 optimises the service's hot functions with TurboFan, its optimising compiler: set at start
// from TURBOFAN_INVOCATIONS (docs/operating.md, "Warm-up"). NODE_OPTIONS does not accept V8's
// --invocation-count-for-turbofan, so it is set here, before the service's modules load; V8 reads it each
// time it decides whether a function is hot enough.
import v8 from "node:v8";

/**
 * TURBOFAN_INVOCATIONS's default. With V8's own 3000, the functions a request runs once (the router's, the
 * body parser's, passport's, the handlers') ran in V8's lower tiers for the first 15 000 to 21 000 requests
 * of a process, and code in those tiers left about 11 % of the bytes a request allocates alive through two
 * young-generation collections, so copied to the old generation; after TurboFan, 1.5 % (one connection).
 * At 300 they are optimised within the first few thousand requests (docs/performance.md, "Warm-up").
 */
export const SHIPPED_TURBOFAN_INVOCATIONS = 300;

/** Applies TURBOFAN_INVOCATIONS; 0 leaves V8's own count. */
export function applyTurbofanInvocations(count: number): void {
  if (count > 0) v8.setFlagsFromString(`--invocation-count-for-turbofan=${count}`);
}
