// The layer rules (README, "Architecture"): every import runs downward.
//   db/  <  server/  <  handlers/<area>/ and worker/  <  server/main.ts + server/lifecycle.ts (the composition root)  <  scripts/
// generated/ holds types and the bundled document, importable from every layer.
/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: "no-circular",
      severity: "error",
      comment: "A cycle ties two modules into one: split the shared part out.",
      from: {},
      to: { circular: true },
    },
    {
      name: "db-is-the-floor",
      severity: "error",
      comment: "db/ holds every statement and knows nothing above it (types from generated/ only).",
      from: { path: "^db/" },
      to: { path: "^(server|handlers|worker|scripts|test)/" },
    },
    {
      name: "a-migration-imports-no-other",
      severity: "error",
      comment:
        "A versioned migration is frozen history: it carries every text it runs, so editing one migration never changes what another ran. Only the list (db/migrations/index.ts) imports them.",
      from: { path: "^db/migrations/", pathNot: "^db/migrations/index\\.ts$" },
      to: { path: "^db/migrations/" },
    },
    {
      name: "migrations-do-not-load-the-current-functions",
      severity: "error",
      comment:
        "db/functions/ holds the text that runs today and changes; a migration that read it would run differently on a fresh database than it did when it was written.",
      from: { path: "^db/migrations/" },
      to: { path: "^db/functions/" },
    },
    {
      name: "server-foundation-stays-below",
      severity: "error",
      comment:
        "server/ is the foundation handlers and the worker stand on; only the composition root (main.ts, lifecycle.ts) wires them in.",
      from: { path: "^server/", pathNot: "^server/(main|lifecycle)\\.ts$" },
      to: { path: "^(handlers|worker|scripts|test)/" },
    },
    {
      name: "handlers-and-worker-are-siblings",
      severity: "error",
      comment: "The worker knows no routes, and handlers queue jobs through db/, never by calling the worker.",
      from: { path: "^(handlers|worker)/" },
      to: { path: "^(scripts|test)/" },
    },
    {
      name: "handlers-do-not-reach-into-the-worker",
      severity: "error",
      from: { path: "^handlers/" },
      to: { path: "^worker/" },
    },
    {
      name: "worker-knows-no-routes",
      severity: "error",
      from: { path: "^worker/" },
      to: { path: "^(handlers|server/http)/" },
    },
    {
      name: "areas-keep-their-internals",
      severity: "error",
      comment: "One API area does not import another area's modules; shared rules live in server/ or db/.",
      from: { path: "^handlers/([^/]+)/" },
      to: { path: "^handlers/[^/]+/", pathNot: "^handlers/$1/" },
    },
    {
      name: "no-test-code-in-the-service",
      severity: "error",
      from: { path: "^(db|server|handlers|worker)/" },
      to: { path: "^test/" },
    },
  ],
  options: {
    doNotFollow: { path: "node_modules" },
    exclude: { path: "^(node_modules|generated/openapi\\.json)" },
    tsConfig: { fileName: "tsconfig.json" },
    tsPreCompilationDeps: true,
    moduleSystems: ["es6"],
  },
};
