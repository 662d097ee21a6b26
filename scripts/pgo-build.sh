#!/usr/bin/env bash
# Profile-guided release build of the CLI: target/pgo/release/lbsim.
#
# An instrumented build runs 32 short scenarios (every load-balancing scheme, congestion
# control and loss recovery, the failure files, a synchronized all-to-all, FSDP training
# collectives), and the release build is then laid out and inlined by the branch and call
# counts measured. Results are the same bytes as the plain release build's (CI compares
# them); the engine runs about 10% fewer instructions per event (README, "Benchmark").
#
# Needs rustup's llvm-tools component (for llvm-profdata), which this script adds. Takes two
# release builds and a few seconds of simulation.
set -euo pipefail
cd "$(dirname "$0")/.."

if command -v rustup >/dev/null 2>&1; then
  rustup component add llvm-tools >/dev/null 2>&1 || true
fi
host=$(rustc -vV | sed -n 's/^host: //p')
profdata="$(rustc --print sysroot)/lib/rustlib/$host/bin/llvm-profdata"
if [ ! -x "$profdata" ]; then
  echo "error: $profdata not found: install it with 'rustup component add llvm-tools'" >&2
  exit 1
fi

dir="$PWD/target/pgo"
profiles="$dir/profiles"
rm -rf "$profiles"
mkdir -p "$profiles"

echo "== instrumented build"
RUSTFLAGS="${RUSTFLAGS:-} -Cprofile-generate=$profiles" CARGO_TARGET_DIR="$dir/gen" \
  cargo build --release --locked -p lbsim-cli

echo "== training runs"
bin="$dir/gen/release/lbsim"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
train() {
  if ! "$bin" run "$@" --threads 1 --quiet --out "$out" >/dev/null; then
    echo "error: training run failed: lbsim run $*" >&2
    exit 1
  fi
}
perm=(scenarios/bench-perm-128.toml --set workload.message_bytes=524288)
train scenarios/bench-a2a-128.toml --set workload.message_bytes=262144
train scenarios/bench-perm-128.toml
train scenarios/default.toml
train scenarios/failures-flaky.toml
train scenarios/failures-degraded-2.toml
train scenarios/llama3-7b-small.toml
# Every scheme, CC and loss recovery the binary registers (as `lbsim list` prints them), so
# that one added later is trained on without a change here.
list=$("$bin" list)
schemes=$(awk '/^load-balancing schemes/ {f = 1; next} /^[^ ]/ {f = 0} f && NF {print $1}' <<<"$list")
ccs=$(awk '/^congestion control/ {getline; print}' <<<"$list")
lrs=$(awk '/^loss recovery/ {getline; print}' <<<"$list")
for v in schemes ccs lrs; do
  if [ -z "${!v}" ]; then
    echo "error: no $v found in the output of 'lbsim list'" >&2
    exit 1
  fi
done
for scheme in $schemes; do
  train "${perm[@]}" --set load_balancing.scheme="$scheme" --set transport.cc=dctcp
done
for cc in $ccs; do
  train "${perm[@]}" --set load_balancing.scheme=reps --set transport.cc="$cc"
done
for lr in $lrs; do
  train "${perm[@]}" --set transport.cc=nscc --set transport.loss_recovery="$lr"
done

echo "== optimized build"
"$profdata" merge -o "$dir/lbsim.profdata" "$profiles"
RUSTFLAGS="${RUSTFLAGS:-} -Cprofile-use=$dir/lbsim.profdata" CARGO_TARGET_DIR="$dir" \
  cargo build --release --locked -p lbsim-cli
echo "built $dir/release/lbsim"
