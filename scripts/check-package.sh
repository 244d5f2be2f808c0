#!/usr/bin/env bash
# The npm package as an operator installs it (docs/operations/install.md, "The npm package"):
#   npm pack                                  the compiled program, the built console, the migrations
#   npm install --omit=dev herald-X.Y.Z.tgz   in an empty directory: no TypeScript, no build, no dev toolchain
#   herald --version; herald serve            on its embedded PostgreSQL, then the first call with the key
#                                             it prints, the console, a CLI command beside the server, a stop
# Usage: scripts/check-package.sh [NODE...]   each Node binary given starts the installed package in turn
#                                             (default: the node on PATH); .ci/run passes Node 20 and 22.
# Slow by nature (an install of the runtime dependencies, then a first start): a step of its own in .ci/run,
# not part of `npm test`. The install reads the local npm cache first (--prefer-offline).
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
nodes=("$@")
[ ${#nodes[@]} -gt 0 ] || nodes=("$(command -v node)")

work=$(mktemp -d /tmp/herald-package-XXXXXX)
server=''
cleanup() {
  if [ -n "$server" ] && kill -0 "$server" 2>/dev/null; then kill -TERM "$server" && wait "$server" || true; fi
  # A server that died left its embedded PostgreSQL behind: stop that one (its pid is in its data directory).
  for pidfile in "$work"/data-*/postgres/postmaster.pid; do
    [ -f "$pidfile" ] && kill -TERM "$(head -1 "$pidfile")" 2>/dev/null || true
  done
  rm -rf "$work"
}
trap cleanup EXIT
fail() {
  echo "check-package: $*" >&2
  exit 1
}
seconds() { echo $(($(date +%s) - started)); }

started=$(date +%s)
# The pack holds dist/ as it is: build it first when a source is newer than the last build (in CI the
# install's prepare script has just built it).
if [ ! -e dist/.build-stamp ] || [ -n "$(find src console package.json -newer dist/.build-stamp -print -quit)" ]; then
  npm run build >/dev/null
fi
tarball="$work/$(npm pack --ignore-scripts --silent --pack-destination "$work" | tail -1)"
version=$(node -p "require('./package.json').version")
echo "packed $(basename "$tarball") ($(du -h "$tarball" | cut -f1)) in $(seconds) s"

# What the package holds: the compiled program, the console build, the migrations, the release documents;
# no TypeScript source, no test, no source map.
contents=$(tar tzf "$tarball")
for path in bin/herald.js dist/src/cli/main.js dist/src/store/migrations/001_foundation.sql dist/console/index.html \
  LICENSE CHANGELOG.md SECURITY.md README.md; do
  grep -qx "package/$path" <<<"$contents" || fail "the package lacks $path"
done
for migration in src/store/migrations/*.sql; do
  grep -qx "package/dist/$migration" <<<"$contents" || fail "the package lacks the migration $migration"
done
# The receiver kit is a workspace of the repository (packages/receiver), published on its own: never inside
# the server's package, nor a dependency of it.
if grep -q '^package/packages/' <<<"$contents"; then fail "the server package holds the workspace packages/"; fi
if tar xzf "$tarball" -O package/package.json | jq -e '[.dependencies, .optionalDependencies, .peerDependencies] | map(keys? // []) | add | index("@herald/receiver")' >/dev/null; then
  fail "the server package depends on @herald/receiver"
fi
if grep -E '\.ts$|\.test\.js$|\.map$|^package/(src|test|console)/' <<<"$contents" | head -3 | grep -q .; then
  fail "the package holds sources, tests or source maps: $(grep -E '\.ts$|\.test\.js$|\.map$|^package/(src|test|console)/' <<<"$contents" | head -3 | tr '\n' ' ')"
fi

mkdir "$work/app"
cd "$work/app"
started=$(date +%s)
npm install --omit=dev --prefer-offline --no-audit --no-fund --loglevel=error "$tarball" >/dev/null
echo "installed with --omit=dev in $(seconds) s ($(du -sh node_modules | cut -f1))"
for tool in typescript tsx vite vitest @biomejs/biome; do
  [ ! -e "node_modules/$tool" ] || fail "the production install holds the development tool $tool"
done
[ ! -e node_modules/@herald/receiver ] || fail "the production install holds the receiver kit (a workspace of the repository, not a dependency)"

# The receiver kit's own package (npm publish -w packages/receiver): installed alone in an empty directory it
# brings nothing of the server (pg is an optional peer), and it loads.
mkdir "$work/kit"
kit="$work/kit/$(cd "$repo" && npm pack -w packages/receiver --silent --pack-destination "$work/kit" | tail -1)"
kit_contents=$(tar tzf "$kit")
for path in package.json README.md LICENSE src/index.js src/index.d.ts src/events.d.ts python/herald_receiver.py; do
  grep -qx "package/$path" <<<"$kit_contents" || fail "the receiver kit's package lacks $path"
done
if grep -E '^package/test/|test_' <<<"$kit_contents" | grep -q .; then fail "the receiver kit's package holds tests"; fi
(cd "$work/kit" && npm install --omit=dev --prefer-offline --no-audit --no-fund --loglevel=error "$kit" >/dev/null)
[ "$(ls "$work/kit/node_modules" | grep -v '^\.' | tr '\n' ' ')" = '@herald ' ] || fail "the receiver kit's install brings more than itself: $(ls "$work/kit/node_modules")"
echo "receiver kit: packed $(basename "$kit"), installed alone"

herald="$work/app/node_modules/herald/bin/herald.js"

for node in "${nodes[@]}"; do
  label="$("$node" --version)"
  started=$(date +%s)
  [ "$("$node" "$herald" --version)" = "$version" ] || fail "herald --version on $label does not print $version"

  data="$work/data-$label"
  port=$("$node" -e "const s = require('node:net').createServer().listen(0, '127.0.0.1', () => { console.log(s.address().port); s.close(); })")
  url="http://127.0.0.1:$port"
  env -u DATABASE_URL HERALD_LOG_LEVEL=info "$node" "$herald" serve --data-dir "$data" --port "$port" >"$work/serve.out" 2>&1 &
  server=$!
  for _ in $(seq 1 240); do
    grep -q '"msg":"herald is ready"' "$work/serve.out" && break
    kill -0 "$server" 2>/dev/null || fail "herald serve on $label exited: $(tail -20 "$work/serve.out")"
    sleep 0.5
  done
  ready=$(grep '"msg":"herald is ready"' "$work/serve.out") || fail "herald serve on $label not ready after 120 s: $(tail -20 "$work/serve.out")"
  [ "$(jq -r .version <<<"$ready")" = "$version" ] || fail "the ready line does not name version $version: $ready"

  [ "$(curl -sf "$url/healthz" | jq -c .)" = "{\"status\":\"ok\",\"version\":\"$version\"}" ] || fail "/healthz on $label: $(curl -s "$url/healthz")"
  [ "$(curl -sf "$url/readyz" | jq -r .status)" = ready ] || fail "/readyz on $label: $(curl -s "$url/readyz")"
  key=$(grep -o 'hk_[A-Za-z0-9_-]\{43\}' "$work/serve.out" | head -1) || fail "no first API key printed on $label"
  answer=$(curl -sf -H "x-api-key: $key" "$url/wallet-as-a-service/wallets/all-assets") || fail "the first call on $label failed"
  [ "$(jq -r .data.total <<<"$answer")" = 0 ] || fail "the first call on $label: $answer"
  curl -sf "$url/console/" | grep -q '<script' || fail "the console is not served on $label"
  "$node" "$herald" customers list --data-dir "$data" | grep -q '^default:' || fail "herald customers list beside the server on $label"

  kill -TERM "$server"
  code=0
  wait "$server" || code=$?
  server=''
  [ "$code" = 0 ] || fail "herald serve on $label exited with $code on SIGTERM: $(tail -5 "$work/serve.out")"
  (cd "$work/kit" && "$node" --input-type=module -e "import('@herald/receiver').then((k) => { if (typeof k.verifyCallback !== 'function' || typeof k.catchUp !== 'function') process.exit(1); })") ||
    fail "the receiver kit does not load on $label"
  echo "herald $version on Node $label: served, answered the first call, stopped cleanly ($(seconds) s)"
done
