#!/usr/bin/env bash
# Runs every fuzz target for SECONDS (default 3600) from its committed corpus, then minimizes
# what it found back into corpus/TARGET. Crashes and hangs are left in out/TARGET/default/ for a
# regression input and a fix. Usage: fuzz/campaign.sh [SECONDS] [TARGET...]
set -euo pipefail
cd "$(dirname "$0")"
secs=${1:-3600}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(scenario sweep cm topo chakra simai)
export AFL_SKIP_CPUFREQ=1 AFL_I_DONT_CARE_ABOUT_MISSING_CRASHES=1 AFL_NO_UI=1
cargo afl build --release
for t in "${targets[@]}"; do
  timeout -s INT "$secs" cargo afl fuzz -i "corpus/$t" -o "out/$t" -t 3000 -m 2048 \
    -V "$secs" -- "target/release/$t" >/dev/null || true
  grep -E "execs_done|edges_found|saved_crashes|saved_hangs" "out/$t/default/fuzzer_stats"
  python3 cmin.py "$t" "out/$t/default/queue"
done
