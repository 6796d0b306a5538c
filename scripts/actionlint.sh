#!/usr/bin/env bash
# actionlint, pinned, built once through the Go module proxy into the kafka-chaos cache (the only ways out of this
# project's machines are PyPI, Debian, Maven Central, npm and the Go proxy). Idempotent.
#   bash scripts/actionlint.sh --install   install only, print the binary's path
#   bash scripts/actionlint.sh [ARGS]      lint (default: every workflow in .github/workflows)
# A Go of 1.21 or later builds it (fetching the toolchain actionlint needs through the proxy); without one, the Go
# toolchain itself is fetched from the proxy as the Go module golang.org/toolchain.
set -euo pipefail
VERSION=v1.7.12
TOOLCHAIN=go1.25.0                     # actionlint v1.7.12's go.mod says go 1.25.0
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CACHE=${KAFKA_CHAOS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kafka-chaos}
TOOLS=$CACHE/tools
BIN=$TOOLS/actionlint-$VERSION/actionlint
die() { printf '[actionlint] error: %s\n' "$*" >&2; exit 2; }

recent_go() {   # a go on PATH that can fetch newer toolchains itself (1.21+)
  command -v go >/dev/null || return 1
  local major minor
  read -r major minor < <(go env GOVERSION 2>/dev/null | sed -E 's/^go([0-9]+)\.([0-9]+).*/\1 \2/') || return 1
  [ "${major:-0}" -gt 1 ] || [ "${minor:-0}" -ge 21 ]
}

toolchain_from_proxy() {   # prints the path of a go binary unpacked from the proxy's golang.org/toolchain module
  local arch; arch=$(uname -m); case $arch in x86_64) arch=amd64;; aarch64) arch=arm64;; esac
  local mod="v0.0.1-$TOOLCHAIN.linux-$arch" dir="$TOOLS/$TOOLCHAIN"
  local gobin="$dir/golang.org/toolchain@$mod/bin/go"
  if [ ! -x "$gobin" ]; then
    local proxy=${GOPROXY:-https://proxy.golang.org}; proxy=${proxy%%,*}
    [ "$proxy" = direct ] || [ "$proxy" = off ] && proxy=https://proxy.golang.org
    mkdir -p "$dir"
    printf '[actionlint] fetching the Go toolchain %s from %s\n' "$TOOLCHAIN" "$proxy" >&2
    curl -fsSL "$proxy/golang.org/toolchain/@v/$mod.zip" -o "$dir/toolchain.zip" \
      || die "cannot fetch $proxy/golang.org/toolchain/@v/$mod.zip; install Go 1.21+ (https://go.dev/dl) and rerun"
    python3 -m zipfile -e "$dir/toolchain.zip" "$dir" && rm -f "$dir/toolchain.zip"
    chmod -R u+x "$dir/golang.org/toolchain@$mod/bin" "$dir/golang.org/toolchain@$mod/pkg/tool"
  fi
  printf '%s\n' "$gobin"
}

if [ ! -x "$BIN" ]; then
  if recent_go; then GO=go; else GO=$(toolchain_from_proxy); export GOTOOLCHAIN=local; fi
  printf '[actionlint] go install github.com/rhysd/actionlint/cmd/actionlint@%s\n' "$VERSION" >&2
  mkdir -p "$(dirname "$BIN")"
  GOBIN=$(dirname "$BIN") "$GO" install "github.com/rhysd/actionlint/cmd/actionlint@$VERSION" >&2 \
    || die "go install of actionlint $VERSION failed (see above); check access to the Go module proxy"
fi
if [ "${1:-}" = "--install" ]; then printf '%s\n' "$BIN"; exit 0; fi
cd "$ROOT"
if [ $# -eq 0 ]; then set -- .github/workflows/*.yml; fi
exec "$BIN" -no-color "$@"
