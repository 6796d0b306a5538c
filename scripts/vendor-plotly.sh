#!/usr/bin/env bash
# Regenerates report/vendor/: plotly.js's "basic" bundle (scatter, bar and pie traces; every trace the report
# draws is a scatter or a bar) at the plotly.js version the installed plotly.py embeds, with its licence.
# The full bundle is 4.8 MB; the basic one is ~1.2 MB, so a report stays self-contained and under 1.5 MB.
# Run it after upgrading plotly (tests/report/test_report_size.py fails when the versions drift apart).
# Needs npm (the npm registry) only here; kafka-chaos itself never needs Node.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PY=${KAFKA_CHAOS_VENV:-$ROOT/.venv}/bin/python
VERSION=${1:-$("$PY" -c 'from plotly.offline import get_plotlyjs_version as v; print(v())')}
OUT=$ROOT/report/vendor
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
(cd "$work" && npm pack --silent "plotly.js-basic-dist-min@$VERSION" >/dev/null && tar xzf ./*.tgz)
head -c 200 "$work/package/plotly-basic.min.js" | grep -q "v$VERSION" || { echo "unexpected bundle header" >&2; exit 1; }
mkdir -p "$OUT"
cp "$work/package/plotly-basic.min.js" "$OUT/plotly-basic.min.js"
cp "$work/package/LICENSE" "$OUT/LICENSE.plotly.js"
echo "report/vendor: plotly.js-basic-dist-min $VERSION, $(wc -c <"$OUT/plotly-basic.min.js") bytes"
