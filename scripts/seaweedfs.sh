#!/usr/bin/env bash
# SeaweedFS's server (`weed`), pinned, built once from its Go module through the Go module proxy into the kafka-chaos
# cache: the real S3-compatible server the object-store tests start on loopback (cluster/s3server.py). `go install
# module@version` refuses this module (its go.mod has replace directives), so the module is downloaded through the
# proxy, copied out of the module cache and built there as the main module. Idempotent; prints the binary's path.
#   bash scripts/seaweedfs.sh --install
set -euo pipefail
VERSION=v0.0.0-20261109003541-7506e5f91cd6     # keep in step with cluster/s3server.py VERSION
MODULE=github.com/seaweedfs/seaweedfs
CACHE=${KAFKA_CHAOS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kafka-chaos}
DIR=$CACHE/seaweedfs/$VERSION
BIN=$DIR/weed
die() { printf '[seaweedfs] error: %s\n' "$*" >&2; exit 2; }

if [ ! -x "$BIN" ]; then
  command -v go >/dev/null || die "install Go 1.24+ (https://go.dev/dl) and rerun"
  printf '[seaweedfs] building %s/weed@%s (a few minutes, once)\n' "$MODULE" "$VERSION" >&2
  mkdir -p "$DIR"
  tmp=$(mktemp -d "$DIR/build.XXXXXX")
  trap 'chmod -R u+w "$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT
  src=$(cd "$tmp" && GOFLAGS=-mod=mod go mod download -json "$MODULE@$VERSION" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
  { [ -n "$src" ] && [ -d "$src" ]; } || die "go mod download of $MODULE@$VERSION failed; check access to the Go module proxy"
  cp -r "$src" "$tmp/src" && chmod -R u+w "$tmp/src"
  (cd "$tmp/src" && CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o "$tmp/weed" ./weed) >&2 \
    || die "go build of $MODULE/weed $VERSION failed (see above)"
  mv "$tmp/weed" "$BIN"
fi
printf '%s\n' "$BIN"
