// typescript-eslint with type-checked rules over every TypeScript file the project owns.
import js from "@eslint/js";
import tseslint from "typescript-eslint";

export default tseslint.config(
  {
    ignores: [
      "generated/**",
      "node_modules/**",
      ".data/**",
      "dist/**",
      "openapi/package/dist/**",
      "openapi/package/.build/**",
      "openapi/package/example/**",
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_" }],
      "@typescript-eslint/consistent-type-imports": "error",
      // Handlers are async by contract (OperationHandler returns a promise) even when they need no await.
      "@typescript-eslint/require-await": "off",
      // Input rules refuse control characters on purpose, so regular expressions name them.
      "no-control-regex": "off",
      // The WHATWG URL parses URLs here. http/app.ts makes the one legacy url.parse() call, which
      // settles Node's DEP0169 check for the validator's calls; after it, a call of ours would not warn.
      "no-restricted-imports": [
        "error",
        ...["url", "node:url"].map((name) => ({
          name,
          importNames: ["parse"],
          message: "Use the WHATWG URL (new URL(...)); url.parse() is deprecated (DEP0169).",
        })),
      ],
    },
  },
  {
    // knex's query builder is typed any; db/ types each row once, by assertion, where it leaves the query.
    files: ["db/**/*.ts"],
    rules: { "@typescript-eslint/no-unnecessary-type-assertion": "off" },
  },
  {
    // tap's t.test() returns a promise that tap itself tracks, and tests read parsed JSON answers.
    files: ["test/**/*.ts"],
    rules: {
      "@typescript-eslint/no-floating-promises": "off",
      "@typescript-eslint/no-unsafe-member-access": "off",
      "@typescript-eslint/no-unsafe-assignment": "off",
      "@typescript-eslint/no-unsafe-call": "off",
      "@typescript-eslint/no-unsafe-argument": "off",
      "@typescript-eslint/no-unsafe-return": "off",
      "@typescript-eslint/require-await": "off",
      "@typescript-eslint/unbound-method": "off",
      // The README's receiver example is compiled and run as written.
      "@typescript-eslint/no-implied-eval": "off",
    },
  },
  {
    files: ["**/*.js", "**/*.cjs"],
    extends: [tseslint.configs.disableTypeChecked],
    languageOptions: { globals: { module: "writable", require: "readonly" } },
  },
);
