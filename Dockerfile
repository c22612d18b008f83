# Tarsier: vulnerability scanning service with Clair-compatible APIs.
FROM node:20-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json tsconfig.json tsconfig.build.json ./
COPY src ./src
RUN npm ci --no-audit --no-fund && npm prune --omit=dev

FROM node:20-bookworm-slim
# zstd, xz and bzip2 decompress layers and feeds that Node's zlib does not.
RUN apt-get update && apt-get install -y --no-install-recommends zstd xz-utils bzip2 ca-certificates \
  && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY package.json ./
COPY migrations ./migrations
ENV NODE_ENV=production \
    TARSIER_DATA_DIR=/var/lib/tarsier/postgres
RUN mkdir -p /var/lib/tarsier && chown node:node /var/lib/tarsier
USER node
EXPOSE 6060 6061
HEALTHCHECK --interval=15s --timeout=3s --start-period=30s \
  CMD node -e "fetch('http://127.0.0.1:6061/health').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"
ENTRYPOINT ["node", "dist/src/cli.js"]
CMD ["serve"]
