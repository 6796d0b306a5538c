#!/usr/bin/env bash
# Idempotent set-up for a fresh clone: a virtualenv with kafka-chaos, a Docker engine if none answers, Kafka's jars
# and the broker image. `--test` adds what the test suite needs (headless chromium for the report test).
# Where Docker already answers, it is used as it is and nothing is installed for it.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
VENV=${KAFKA_CHAOS_VENV:-$ROOT/.venv}
LOGDIR=${KAFKA_CHAOS_LOGDIR:-/var/log/kafka-chaos}
WANT_TEST=0
[ "${1:-}" = "--test" ] && WANT_TEST=1

say() { printf '[setup] %s\n' "$*"; }
die() { printf '[setup] error: %s\n' "$*" >&2; exit 2; }
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo "$@"; else return 1; fi; }

apt_updated=0
apt_install() {
  command -v apt-get >/dev/null || die "need packages ($*) but this is not a Debian system: install them yourself"
  if [ $apt_updated = 0 ]; then as_root apt-get update -q >/dev/null || die "apt-get update failed"; apt_updated=1; fi
  say "apt-get install $*"
  DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -q "$@" >/dev/null || die "apt-get install $* failed"
}

# 1. Host tools: Maven and a JDK resolve the broker jars; debootstrap builds the base image.
missing=()
command -v mvn >/dev/null || missing+=(maven)
command -v java >/dev/null || missing+=(openjdk-17-jdk-headless)
command -v debootstrap >/dev/null || missing+=(debootstrap)
command -v iptables >/dev/null || missing+=(iptables)
[ -f /usr/share/keyrings/debian-archive-keyring.gpg ] || missing+=(debian-archive-keyring)  # debootstrap off Debian
# the power-loss layer (cluster/lazyfs.py): libfuse3 and fusermount3
{ command -v fusermount3 >/dev/null && ldconfig -p 2>/dev/null | grep -q 'libfuse3\.so\.3 '; } || missing+=(fuse3)
[ $WANT_TEST = 1 ] && ! command -v chromium >/dev/null && missing+=(chromium)
# the workflow test: actionlint (built below through the Go proxy) runs shellcheck on the workflows' scripts
[ $WANT_TEST = 1 ] && ! command -v shellcheck >/dev/null && missing+=(shellcheck)
[ $WANT_TEST = 1 ] && ! command -v curl >/dev/null && missing+=(curl)
[ ${#missing[@]} -gt 0 ] && apt_install "${missing[@]}"
# A user (not root) may mount the power-loss layer with allow_other, which Docker's daemon needs to bind it.
if [ "$(id -u)" != 0 ] && [ -f /etc/fuse.conf ] && ! grep -q '^user_allow_other' /etc/fuse.conf; then
  say "enabling user_allow_other in /etc/fuse.conf (the power-loss layer's mounts are bound into containers)"
  as_root sh -c "echo user_allow_other >> /etc/fuse.conf" || say "could not: power-loss scenarios need root"
fi

# 2. Python: a virtualenv with the package (editable), reinstalled only when pyproject.toml changes.
PY=${PYTHON:-python3}
"$PY" -c 'import sys; sys.exit(sys.version_info < (3, 11))' || die "$PY is older than 3.11"
[ -x "$VENV/bin/python" ] || { say "creating virtualenv $VENV"; "$PY" -m venv "$VENV"; }
stamp="$VENV/.kafka-chaos-installed"
want=$(sha256sum < "$ROOT/pyproject.toml" | cut -c1-16)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  say "installing kafka-chaos into $VENV"
  "$VENV/bin/pip" install -q --upgrade pip >/dev/null
  "$VENV/bin/pip" install -q -e "${ROOT}[test]" || die "pip install failed"
  echo "$want" > "$stamp"
fi

# 2b. For the tests: actionlint, pinned, through the Go module proxy into the cache (once).
if [ $WANT_TEST = 1 ]; then
  bash "$ROOT/scripts/actionlint.sh" --install >/dev/null || die "could not install actionlint (see above)"
  # the object-store tests' real S3 server (SeaweedFS, through the Go module proxy; the tests start it on loopback)
  bash "$ROOT/scripts/seaweedfs.sh" --install >/dev/null \
    || say "warning: could not build SeaweedFS (see above): the object-store tests will skip"
fi

# 2c. Toxiproxy, pinned, through the Go module proxy into the cache (once): the link faults' proxy (--link-proxy).
# Without it everything else works; a link fault then says how to get it.
bash "$ROOT/scripts/toxiproxy.sh" --install >/dev/null \
  || say "warning: could not build toxiproxy (see above): link faults (--link-proxy) will not run"

# 2d. The Spark driver's class-data archive (checkers/spark/cds.py), once per JDK and pyspark: a cold check's JVM
# maps Spark's classes from it (a real run's check 31.5-33.3 s -> 24.4-25.1 s). Without it checks run as well.
"$VENV/bin/python" -m kafka_chaos.checkers.spark.cds >/dev/null 2>&1 \
  || say "warning: could not write Spark's class-data archive: checks start their JVM without it"

# 3. A Docker engine: use the one that answers; else start (and if need be install) one.
if docker info >/dev/null 2>&1; then
  say "Docker engine answers: using it"
else
  if ! command -v dockerd >/dev/null; then
    apt_install docker.io
  fi
  if docker info >/dev/null 2>&1; then
    say "Docker engine answers: using it"
  elif [ -d /run/systemd/system ] && systemctl list-unit-files docker.service >/dev/null 2>&1 \
       && as_root systemctl start docker 2>/dev/null && docker info >/dev/null 2>&1; then
    say "started docker.service"
  else
    as_root mkdir -p "$LOGDIR"
    say "starting dockerd in the background (log: $LOGDIR/dockerd.log)"
    as_root sh -c "nohup dockerd >>'$LOGDIR/dockerd.log' 2>&1 &" || die "cannot start dockerd (need root)"
    for _ in $(seq 1 60); do docker info >/dev/null 2>&1 && break; sleep 1; done
    docker info >/dev/null 2>&1 || die "dockerd did not answer within 60 s; see $LOGDIR/dockerd.log"
  fi
fi

# 4. Kafka's jars from Maven Central and the broker image (both cached; rebuilt only when inputs change).
# KAFKA_CHAOS_SETUP_IMAGE=plan: jars only, and print the image tags (CI restores its image cache by them).
# The base image's source: KAFKA_CHAOS_BASE_IMAGE / KAFKA_CHAOS_DEBIAN_MIRROR, else chosen from this host.
plan=()
[ "${KAFKA_CHAOS_SETUP_IMAGE:-build}" = plan ] && plan=(--plan)
"$VENV/bin/kafka-chaos" setup ${KAFKA_CHAOS_VERSION:+--kafka-version "$KAFKA_CHAOS_VERSION"} "${plan[@]}"
say "ready: $VENV/bin/kafka-chaos"
