# herald's container image (docs/operations/install.md, "The container image").
#   docker build -t herald .        (or: buildah bud -t herald .; scripts/check-image.sh builds and checks it)
#   docker run -p 8080:8080 -v herald-data:/var/lib/herald herald
# Two stages: the first installs the development toolchain and builds (TypeScript, the console), then
# drops the development dependencies; the second holds Node, the compiled program and its runtime
# dependencies only, and runs as an unprivileged user.
ARG NODE_IMAGE=node:22-bookworm-slim

FROM ${NODE_IMAGE} AS build
WORKDIR /build
# The dependencies first, in a layer of their own that a change of the sources does not rebuild.
# `npm install` with the committed lockfile keeps the locked versions (as .ci/run does: `npm ci` fails
# where the registry lacks another platform's optional packages). The receiver kit is a workspace of the
# repository (packages/receiver): its package.json lets the lockfile resolve; the kit itself is not part
# of the server and is not copied.
COPY package.json package-lock.json ./
COPY packages/receiver/package.json packages/receiver/package.json
RUN npm install --ignore-scripts --no-audit --no-fund --loglevel=error
COPY tsconfig.json tsconfig.build.json ./
COPY bin bin
COPY src src
COPY console console
# The install scripts the runtime needs (the embedded PostgreSQL's, zeromq's), the build (TypeScript into
# dist/, the console into dist/console), then the development dependencies dropped, and the workspace's
# link (node_modules/@herald/receiver -> packages/receiver, which the runtime stage does not have).
RUN npm rebuild --loglevel=error \
 && npm run build \
 && npm prune --omit=dev --no-audit --no-fund --loglevel=error \
 && rm -f node_modules/@herald/receiver && rmdir --ignore-fail-on-non-empty node_modules/@herald

FROM ${NODE_IMAGE}
ENV NODE_ENV=production \
    HERALD_HOST=0.0.0.0 \
    HERALD_PORT=8080 \
    HERALD_DATA_DIR=/var/lib/herald
# PostgreSQL (the embedded one) refuses to run as root, and herald needs no privilege: a user of its own.
RUN groupadd --system --gid 10001 herald \
 && useradd --system --uid 10001 --gid herald --home-dir /var/lib/herald --shell /usr/sbin/nologin herald \
 && mkdir -p /var/lib/herald /etc/herald \
 && chown herald:herald /var/lib/herald
COPY --from=build /build/package.json /opt/herald/package.json
COPY --from=build /build/bin /opt/herald/bin
COPY --from=build /build/dist /opt/herald/dist
COPY --from=build /build/node_modules /opt/herald/node_modules
COPY deploy/container/readyz.mjs /opt/herald/deploy/container/readyz.mjs
RUN ln -s /opt/herald/bin/herald.js /usr/local/bin/herald
# /var/lib/herald: the embedded database (unused with DATABASE_URL). /etc/herald: herald.config.json,
# read when present (it is the working directory) or named by HERALD_CONFIG, and files it names (a CA,
# the secrets encryption key).
VOLUME ["/var/lib/herald", "/etc/herald"]
WORKDIR /etc/herald
USER herald:herald
EXPOSE 8080
HEALTHCHECK --interval=15s --timeout=5s --start-period=60s --retries=3 CMD ["node", "/opt/herald/deploy/container/readyz.mjs"]
# `herald serve` by default; any other command of the CLI in its place:
#   docker run --rm -v herald-data:/var/lib/herald herald customers list
ENTRYPOINT ["herald"]
CMD ["serve"]
