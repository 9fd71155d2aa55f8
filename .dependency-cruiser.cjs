// The layer rules (docs/architecture.md, "The house"): every import runs downward, with no exceptions.
//   db/  <  foundation/  <  http/  <  handlers/<area>/        <  app/ (the composition root)  <  admin/, scripts/
//               foundation/  <  worker/ (beside http/ and handlers/, never importing them)
// generated/ holds what `npm run generate` writes from the document (types, the event kinds, the bundled
// document), importable from every floor. portal/ is a browser app of its own: it imports the contract
// package's client and generated/, and nothing of the service.
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
      to: { path: "^(app|admin|foundation|http|handlers|worker|portal|scripts|test)/" },
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
      name: "foundation-stands-on-db",
      severity: "error",
      comment: "foundation/ (config, logs, metrics, secrets) stands on db/ alone.",
      from: { path: "^foundation/" },
      to: { path: "^(app|admin|http|handlers|worker|portal|scripts|test)/" },
    },
    {
      name: "http-is-the-pipeline",
      severity: "error",
      comment: "http/ is the floor handlers stand on: it receives the handler table, it never imports it.",
      from: { path: "^http/" },
      to: { path: "^(app|admin|handlers|worker|portal|scripts|test)/" },
    },
    {
      name: "handlers-do-not-reach-into-the-worker",
      severity: "error",
      comment: "Handlers queue jobs through db/, never by calling the worker.",
      from: { path: "^handlers/" },
      to: { path: "^(app|admin|worker|portal|scripts|test)/" },
    },
    {
      name: "worker-knows-no-routes",
      severity: "error",
      from: { path: "^worker/" },
      to: { path: "^(app|admin|http|handlers|portal|scripts|test)/" },
    },
    {
      name: "areas-keep-their-internals",
      severity: "error",
      comment: "One API area does not import another area's modules; shared rules live in http/, foundation/ or db/.",
      from: { path: "^handlers/([^/]+)/" },
      to: { path: "^handlers/[^/]+/", pathNot: "^handlers/$1/" },
    },
    {
      name: "the-composition-root-is-used-by-tools-only",
      severity: "error",
      comment: "app/ wires the floors together; only admin/, scripts/ and tests start it.",
      from: { path: "^app/" },
      to: { path: "^(admin|portal|scripts|test)/" },
    },
    {
      name: "the-admin-cli-is-a-room-of-its-own",
      severity: "error",
      comment: "admin/ (npm run admin) stands on the composition root and the floors below it.",
      from: { path: "^admin/" },
      to: { path: "^(portal|scripts|test)/" },
    },
    {
      name: "the-portal-is-a-front-end-of-its-own",
      severity: "error",
      comment:
        "The browser portal talks to the service over HTTP through the contract package, nothing else; what it knows of the document (the event kinds) comes from generated/.",
      from: { path: "^portal/" },
      to: { path: "^(app|admin|foundation|http|handlers|db|worker|scripts|test)/" },
    },
    {
      name: "no-test-code-in-the-service",
      severity: "error",
      from: { path: "^(app|admin|db|foundation|http|handlers|worker|portal)/" },
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
