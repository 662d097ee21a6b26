#!/usr/bin/env bash
# The report in a real browser: `lbsim paper --scale small` (timed), then headless Chromium
# renders report.html to a PNG and dumps the DOM; the page must have run its script, logged
# nothing to the console (the report logs nothing, so any console line is an error), and hold
# every expected figure by element id. The console check is first shown to catch a broken page.
# Its temporary directories are removed when it passes and kept (and named) when it fails;
# REPORT_TEST_OUT, a directory of the user's, is never removed.
set -euo pipefail
cd "$(dirname "$0")/.."
LBSIM=${LBSIM:-$PWD/target/release/lbsim}

temps=()
cleanup() {
  local rc=$?
  local d
  for d in "${temps[@]}"; do
    if [ "$rc" -eq 0 ]; then
      rm -rf "$d"
    elif [ -e "$d" ]; then
      echo "report-test failed; kept $d" >&2
    fi
  done
  exit "$rc"
}
trap cleanup EXIT
if [ -n "${REPORT_TEST_OUT:-}" ]; then
  OUT=$REPORT_TEST_OUT
else
  OUT=$(mktemp -d /tmp/lbsim-report.XXXXXX)
  temps+=("$OUT")
fi

if ! command -v chromium >/dev/null; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends chromium >/dev/null
fi

# Renders $1 (a file) to $2.png, $2.dom.html and $2.log.
render() {
  local profile
  profile=$(mktemp -d /tmp/lbsim-chromium.XXXXXX)
  temps+=("$profile")
  local flags=(--headless --no-sandbox --disable-gpu --disable-background-networking
    --disable-component-update --disable-sync --no-first-run --user-data-dir="$profile"
    --enable-logging=stderr --v=0 --window-size=1300,2400)
  timeout 120 chromium "${flags[@]}" --screenshot="$2.png" "file://$1" 2>"$2.log" >/dev/null
  timeout 120 chromium "${flags[@]}" --dump-dom "file://$1" 2>>"$2.log" >"$2.dom.html"
  rm -rf "$profile"
}

console_lines() { grep -c ':CONSOLE' "$1.log" || true; }

# The check itself works: a page with a console error and an exception is caught.
printf '<html><body><script>console.error("x"); throw new Error("y");</script></body></html>' >"$OUT/broken.html"
render "$OUT/broken.html" "$OUT/broken"
[ "$(console_lines "$OUT/broken")" -ge 2 ] || { echo "console check does not see errors" >&2; exit 1; }

t0=$(date +%s)
"$LBSIM" paper --scale small --out "$OUT/paper" >"$OUT/paper.txt"
t_paper=$(($(date +%s) - t0))
grep -E '^[0-9]+\. ' "$OUT/paper.txt"

render "$OUT/paper/report.html" "$OUT/report"
n=$(console_lines "$OUT/report")
if [ "$n" -ne 0 ]; then
  grep ':CONSOLE' "$OUT/report.log" >&2
  echo "report: $n console messages" >&2
  exit 1
fi
grep -q 'data-report-ready="1"' "$OUT/report.dom.html" || { echo "report script did not run" >&2; exit 1; }
[ "$(stat -c %s "$OUT/report.png")" -gt 20000 ] || { echo "screenshot missing or blank" >&2; exit 1; }
missing=0
for id in lbsim-version findings finding-1 finding-5 finding-8 finding-10 \
  fig-cct-01-failure-free-permutation fig-cct-01-failure-free-all-to-all \
  fig-fct-01-failure-free-permutation-0 fig-fct-01-failure-free-all-to-all-0 \
  fig-queue-02-queue-scaling-permutation-0 table-slopes-02-queue-scaling-permutation-0 \
  fig-failure-03-failure-g-failure-convergence-us-permutation \
  fig-failure-04-failure-rate-failures-0-random-fraction-permutation \
  fig-cct-05-buffer-permutation fig-cct-06-message-size-permutation fig-cct-10-roce-permutation \
  fig-cct-11-mswift-permutation fig-cct-11-mswift-all-to-all \
  table-raw-01-failure-free scenario-01-failure-free; do
  if ! grep -q "id=\"$id\"" "$OUT/report.dom.html"; then
    echo "missing figure #$id" >&2
    missing=1
  fi
done
[ "$missing" -eq 0 ]
# Findings are a table with a verdict badge per row, and every figure says what to read from it.
[ "$(grep -o 'class="badge ' "$OUT/report.dom.html" | wc -l)" -eq 10 ] || { echo "findings table: expected 10 verdict badges" >&2; exit 1; }
figs=$(grep -o '<figure id=' "$OUT/report.dom.html" | wc -l)
reads=$(grep -o '<span class="read">[^<]' "$OUT/report.dom.html" | wc -l)
[ "$figs" -eq "$reads" ] || { echo "$figs figures but $reads captions" >&2; exit 1; }
# A run report (FSDP: collective and host timelines) and a compare report, in the browser too.
"$LBSIM" run scenarios/llama3-7b-small.toml --set telemetry.enabled=true --set 'telemetry.flows=[0, 1, 2]' --out "$OUT/run" --quiet >/dev/null
"$LBSIM" compare --set topology.k=4 --set workload.message_bytes=65536 --schemes ecmp,host_spray,reps,ofan --out "$OUT/cmp" >/dev/null
for d in run cmp; do
  "$LBSIM" report "$OUT/$d" -o "$OUT/$d/report.html" >/dev/null
  render "$OUT/$d/report.html" "$OUT/$d-report"
  n=$(console_lines "$OUT/$d-report")
  [ "$n" -eq 0 ] || { grep ':CONSOLE' "$OUT/$d-report.log" >&2; echo "$d report: $n console messages" >&2; exit 1; }
  grep -q 'data-report-ready="1"' "$OUT/$d-report.dom.html" || { echo "$d report script did not run" >&2; exit 1; }
  [ "$(stat -c %s "$OUT/$d-report.png")" -gt 20000 ] || { echo "$d report screenshot missing or blank" >&2; exit 1; }
done
for id in run-summary fig-run-fct fig-run-timeline-ofan fig-run-flows-ofan fig-tel-util-ofan fig-tel-queue-heat-ofan fig-tel-queue-agg-up-ofan fig-tel-window-ofan; do
  grep -q "id=\"$id\"" "$OUT/run-report.dom.html" || { echo "run report: missing #$id" >&2; exit 1; }
done
grep -q 'id="fig-run-cct"' "$OUT/cmp-report.dom.html" || { echo "compare report: missing #fig-run-cct" >&2; exit 1; }
echo "report-test: paper --scale small in ${t_paper} s; report rendered ($(stat -c %s "$OUT/report.png") B screenshot${REPORT_TEST_OUT:+ at $OUT/report.png}), no console messages, all figures present"
