#!/usr/bin/env bash
# Real Slurm: a one-node cluster on localhost (munged, slurmctld, slurmd under a temp dir) runs a
# small sweep through `lbsim sweep --slurm` as a job array; after --collect, results.csv must equal
# the same sweep run locally (every column but the two wall-clock ones). Installs Debian's
# slurm-wlm and munge if missing; stops the daemons it started, also on failure. Its temporary
# directory is removed when it passes and kept (and named) when it fails.
set -euo pipefail
cd "$(dirname "$0")/.."
LBSIM=${LBSIM:-$PWD/target/release/lbsim}
SWEEP=$PWD/sweeps/example.toml
t0=$(date +%s)

if ! command -v slurmctld >/dev/null || ! command -v slurmd >/dev/null || ! command -v munged >/dev/null; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends slurm-wlm munge >/dev/null
fi

W=$(mktemp -d /tmp/lbsim-slurm.XXXXXX)
chmod 755 "$W"
stop() {
  local rc=$?
  for d in slurmd slurmctld munged; do
    if [ -s "$W/$d.pid" ]; then
      kill "$(cat "$W/$d.pid")" 2>/dev/null || true
    fi
  done
  sleep 1
  if [ "$rc" -ne 0 ]; then
    echo "slurm-test failed (files kept in $W); logs:" >&2
    tail -n 20 "$W"/*.log "$W"/out/slurm/*.out 2>/dev/null >&2 || true
  else
    rm -rf "$W"
  fi
  exit "$rc"
}
trap stop EXIT

host=$(hostname -s)
mem_mb=$(awk '/MemTotal/ {print int($2 / 1024 * 0.9)}' /proc/meminfo)
mkdir -p "$W/state" "$W/spool"
mungekey -c -f -k "$W/munge.key"
chmod 600 "$W/munge.key"
munged --force --key-file="$W/munge.key" --socket="$W/munge.sock" \
  --pid-file="$W/munged.pid" --log-file="$W/munged.log" --seed-file="$W/munged.seed"

cat >"$W/slurm.conf" <<CONF
ClusterName=lbsimci
SlurmctldHost=$host
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$W/munge.sock
CredType=cred/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/backfill
MpiDefault=none
ReturnToService=2
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
JobAcctGatherType=jobacct_gather/none
StateSaveLocation=$W/state
SlurmdSpoolDir=$W/spool
SlurmctldPidFile=$W/slurmctld.pid
SlurmdPidFile=$W/slurmd.pid
SlurmctldLogFile=$W/slurmctld.log
SlurmdLogFile=$W/slurmd.log
NodeName=$host CPUs=$(nproc) RealMemory=$mem_mb State=UNKNOWN
PartitionName=ci Nodes=ALL Default=YES MaxTime=INFINITE State=UP
CONF
export SLURM_CONF=$W/slurm.conf
slurmctld -c
slurmd

for _ in $(seq 60); do
  state=$(sinfo -h -o %T 2>/dev/null || true)
  [ "$state" = idle ] && break
  sleep 1
done
sinfo
[ "$state" = idle ] || { echo "slurm node not idle: '$state'" >&2; exit 1; }

out=$("$LBSIM" sweep "$SWEEP" --out "$W/out" --slurm --partition ci --array-max 3)
echo "$out"
job=$(echo "$out" | sed -n 's/^submitted Slurm job array \([0-9]*\).*/\1/p')
[ -n "$job" ] || { echo "no job id in sbatch output" >&2; exit 1; }
for _ in $(seq 300); do
  [ -z "$(squeue -h -j "$job" 2>/dev/null)" ] && break
  sleep 1
done
[ -z "$(squeue -h -j "$job" 2>/dev/null)" ] || { echo "job array $job still queued or running" >&2; squeue; exit 1; }
ls "$W/out/slurm/"
"$LBSIM" sweep --collect "$W/out"
"$LBSIM" sweep "$SWEEP" --out "$W/local" >/dev/null

# Drop the wall-clock columns, then the two files must match byte for byte.
figures() {
  awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "wall_seconds" || $i == "events_per_second") skip[i] = 1 }
           { line = ""; for (i = 1; i <= NF; i++) if (!skip[i]) line = line (line == "" ? "" : ",") $i; print line }' "$1"
}
rows=$(($(wc -l <"$W/out/results.csv") - 1))
[ "$rows" -eq 8 ] || { echo "expected 8 rows, got $rows" >&2; exit 1; }
if ! diff <(figures "$W/out/results.csv") <(figures "$W/local/results.csv"); then
  echo "Slurm results differ from the local run" >&2
  exit 1
fi
echo "slurm-test: job array $job, $rows rows identical to the local run ($(($(date +%s) - t0)) s)"
