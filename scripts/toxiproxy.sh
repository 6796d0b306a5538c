#!/usr/bin/env bash
# Toxiproxy's server, pinned, built once through the Go module proxy into the kafka-chaos cache (static, so the
# link proxy's image is FROM scratch and nothing is pulled from a registry). Idempotent; prints the binary's path.
# Used by the link faults (cluster/linkproxy.py, nemesis/links.py). Needs a Go of 1.21 or later on PATH, or fetches
# the Go toolchain from the proxy the way scripts/actionlint.sh does.
#   bash scripts/toxiproxy.sh --install
set -euo pipefail
VERSION=v2.12.0                          # keep in step with cluster/linkproxy.py VERSION
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CACHE=${KAFKA_CHAOS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kafka-chaos}
DIR=$CACHE/toxiproxy/$VERSION
BIN=$DIR/toxiproxy-server
die() { printf '[toxiproxy] error: %s\n' "$*" >&2; exit 2; }

if [ ! -x "$BIN" ]; then
  if command -v go >/dev/null && [ "$(go env GOVERSION | sed -E 's/^go1\.([0-9]+).*/\1/')" -ge 21 ] 2>/dev/null; then
    GO=go
  else   # the toolchain actionlint.sh fetches from the Go proxy (golang.org/toolchain) serves here too
    bash "$ROOT/scripts/actionlint.sh" --install >/dev/null || die "no Go 1.21+ and none could be fetched"
    GO=$(find "$CACHE/tools" -path '*golang.org/toolchain@*/bin/go' -type f | head -1)
    [ -n "$GO" ] || die "install Go 1.21+ (https://go.dev/dl) and rerun"
    export GOTOOLCHAIN=local
  fi
  printf '[toxiproxy] go install github.com/Shopify/toxiproxy/v2/cmd/server@%s\n' "$VERSION" >&2
  mkdir -p "$DIR"
  tmp=$(mktemp -d "$DIR/build.XXXXXX")
  trap 'rm -rf "$tmp"' EXIT
  CGO_ENABLED=0 GOBIN=$tmp "$GO" install -trimpath -ldflags="-s -w" \
    "github.com/Shopify/toxiproxy/v2/cmd/server@$VERSION" >&2 \
    || die "go install of toxiproxy $VERSION failed (see above); check access to the Go module proxy"
  mv "$tmp/server" "$BIN"
fi
printf '%s\n' "$BIN"
