#!/usr/bin/env bash
# Integration test of the cluster path on a real Slurm: docs/cluster.md's job array
# (scripts/verify-array.sbatch, submitted unchanged) and a dependent merge job on a one-node
# cluster started here by hand (munged, slurmctld, slurmd; no systemd), compared byte for byte
# with an unsharded run; then a merge with one shard deleted must fail and name that shard.
#
#   bash scripts/slurm-test.sh        (root; installs slurmctld, slurmd, slurm-client, munge)
#
# Environment: DPSGD_LAB = the binary (default: the one `cargo test` builds), SLURM_TEST_SHARDS
# (default 4), SLURM_TEST_TIMEOUT in seconds (default 600), DPSGD_SKIP_SLURM=1 to skip.
# Prints "SKIP: ..." and exits 0 where the daemons cannot run (not root, no Slurm and no
# apt-get); prints "FAIL: ..." and exits 1 on any failure. Every daemon and job it started is
# stopped on exit, also on failure.
set -euo pipefail
cd "$(dirname "$0")/.."

skip() {
  echo "SKIP: slurm test: $*"
  exit 0
}
fail() {
  echo "FAIL: slurm test: $*" >&2
  exit 1
}
say() { echo "slurm test: $*"; }

[ "${DPSGD_SKIP_SLURM:-}" = 1 ] && skip "DPSGD_SKIP_SLURM=1"
[ "$(uname -s)" = Linux ] || skip "needs Linux"
[ "$(id -u)" = 0 ] || skip "needs root (munged, slurmctld and slurmd run as root here, SlurmUser=root)"

START=$SECONDS
SHARDS=${SLURM_TEST_SHARDS:-4}
TIMEOUT=${SLURM_TEST_TIMEOUT:-600}

# --- Slurm and munge from the distribution ------------------------------------------------
missing=()
for b in munged mungekey slurmctld slurmd sbatch squeue scontrol sinfo scancel; do
  command -v "$b" >/dev/null 2>&1 || missing+=("$b")
done
if [ ${#missing[@]} -gt 0 ]; then
  command -v apt-get >/dev/null 2>&1 ||
    skip "Slurm/munge not installed (${missing[*]} missing) and no apt-get to install them"
  say "installing slurmctld slurmd slurm-client munge (apt-get)"
  t0=$SECONDS
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null || fail "apt-get update failed"
  apt-get install -y -qq --no-install-recommends slurmctld slurmd slurm-client munge >/dev/null ||
    fail "apt-get install slurmctld slurmd slurm-client munge failed"
  say "installed in $((SECONDS - t0)) s"
fi
SLURM_VERSION=$(slurmd -V)
say "$SLURM_VERSION, $(munged --version 2>&1 | head -1)"

# --- the binary -----------------------------------------------------------------------------
if [ -z "${DPSGD_LAB:-}" ]; then
  # The binary `cargo test` builds (optimized: [profile.test] opt-level = 3); a no-op after it.
  cargo test --no-run --quiet 2>/dev/null || cargo test --no-run
  DPSGD_LAB=${CARGO_TARGET_DIR:-target}/debug/dpsgd-lab
fi
[ -x "$DPSGD_LAB" ] || fail "no binary at $DPSGD_LAB"
export DPSGD_LAB

# --- one-node cluster in a temporary folder ---------------------------------------------------
TMP=$(mktemp -d /tmp/dpsgd-slurm-test.XXXXXX)
chmod 700 "$TMP"
PIDS=()
CONF=$TMP/slurm.conf

# Every process this test started: the daemons by PID, and job processes (slurmstepd, the job
# scripts and the binary) by the SLURM_CONF of this test in their environment, which no other
# process has.
ours() {
  local p
  for p in /proc/[0-9]*; do
    case "${p#/proc/}" in "$$" | "$BASHPID") continue ;; esac
    if { tr "\0" "\n" <"$p/environ"; } 2>/dev/null | grep -qxF "SLURM_CONF=$CONF"; then
      echo "${p#/proc/}"
    fi
  done
}
cleanup() {
  local rc=$? p left
  trap - EXIT INT TERM
  if [ -n "${SLURM_CONF:-}" ] && [ ${#PIDS[@]} -gt 0 ]; then
    # Cancel this cluster's jobs and give slurmstepd up to 15 s to end them cleanly.
    scancel --full --quiet --user=root 2>/dev/null || true
    for _ in $(seq 30); do
      squeue -h 2>/dev/null | grep -q . || break
      sleep 0.5
    done
  fi
  for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  for _ in $(seq 50); do
    left=0
    for p in "${PIDS[@]}"; do kill -0 "$p" 2>/dev/null && left=1; done
    [ $left = 0 ] && break
    sleep 0.1
  done
  for p in "${PIDS[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
  for p in $(ours); do kill -KILL "$p" 2>/dev/null || true; done
  if [ $rc != 0 ]; then
    for f in "$TMP"/*.log "$TMP"/*.stderr "$TMP"/logs/*; do
      [ -s "$f" ] || continue
      # A daemon's stderr repeats its log file; show it only where there is no log.
      case "$f" in *.stderr) [ -s "${f%.stderr}.log" ] && continue ;; esac
      echo "--- $f (last 20 lines)" >&2
      tail -n 20 "$f" >&2
    done
  fi
  rm -rf "$TMP"
  exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

free_port() {
  local p
  for p in $(seq "$1" $(($1 + 200))); do
    if ! ss -Htln "sport = :$p" 2>/dev/null | grep -q .; then
      echo "$p"
      return
    fi
  done
}
CTLD_PORT=$(free_port $((17000 + $$ % 1000 * 2)))
SLURMD_PORT=$(free_port $((CTLD_PORT + 1)))
{ [ -n "$CTLD_PORT" ] && [ -n "$SLURMD_PORT" ]; } || fail "no free TCP ports"

mkdir -p "$TMP"/{munge,state,spool,logs}
chmod 700 "$TMP/munge"
mungekey --create --keyfile="$TMP/munge/munge.key" 2>/dev/null ||
  { dd if=/dev/urandom of="$TMP/munge/munge.key" bs=1024 count=1 status=none && chmod 400 "$TMP/munge/munge.key"; }
munged --foreground --force --socket="$TMP/munge/munge.socket" --key-file="$TMP/munge/munge.key" \
  --pid-file="$TMP/munge/munged.pid" --seed-file="$TMP/munge/munged.seed" \
  --log-file="$TMP/munged.log" >"$TMP/munged.stderr" 2>&1 &
PIDS+=($!)
for _ in $(seq 50); do [ -S "$TMP/munge/munge.socket" ] && break; sleep 0.1; done
[ -S "$TMP/munge/munge.socket" ] || fail "munged did not start (see munged.log)"

# Node line from this machine (hostname, CPUs, sockets/cores/threads, memory) as slurmd sees it.
NODE=$(slurmd -C | head -1)
HOST=$(hostname -s)
case "$NODE" in "NodeName=$HOST "*) ;; *) fail "slurmd -C says '$NODE', hostname is $HOST" ;; esac
cat >"$CONF" <<EOF
# One-node cluster of scripts/slurm-test.sh.
ClusterName=dpsgdtest
SlurmctldHost=$HOST(127.0.0.1)
SlurmctldPort=$CTLD_PORT
SlurmdPort=$SLURMD_PORT
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$TMP/munge/munge.socket
StateSaveLocation=$TMP/state
SlurmdSpoolDir=$TMP/spool
SlurmctldPidFile=$TMP/slurmctld.pid
SlurmdPidFile=$TMP/slurmd.pid
SlurmctldLogFile=$TMP/slurmctld.log
SlurmdLogFile=$TMP/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
SwitchType=switch/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
ReturnToService=2
MinJobAge=3600
$NODE NodeAddr=127.0.0.1 State=UNKNOWN
PartitionName=test Nodes=$HOST Default=YES MaxTime=INFINITE State=UP
EOF
export SLURM_CONF=$CONF

slurmctld -D -i -f "$CONF" >"$TMP/slurmctld.stderr" 2>&1 &
PIDS+=($!)
slurmd -D -f "$CONF" >"$TMP/slurmd.stderr" 2>&1 &
PIDS+=($!)
state=
for _ in $(seq 60); do
  state=$(sinfo -h -n "$HOST" -o %T 2>/dev/null || true)
  [ "$state" = idle ] && break
  for p in "${PIDS[@]}"; do kill -0 "$p" 2>/dev/null || fail "a daemon exited at start (see the logs)"; done
  sleep 0.5
done
[ "$state" = idle ] || fail "node $HOST is '${state:-unknown}', not idle, after 30 s"
say "cluster up: $HOST, slurmctld :$CTLD_PORT, slurmd :$SLURMD_PORT"

# --- the spec: thm65_k1_sharp with its quick table as [full] (the script runs --full) ---------
SPEC=$TMP/thm65_k1_sharp.toml
awk '
  /^\[quick\]/ { q = 1; print; next }
  /^\[full\]/  { q = 0; f = 1; print; printf "%s", quick; next }
  /^\[/        { q = 0; f = 0 }
  q && NF      { quick = quick $0 "\n" }
  !f           { print }
  f && !NF     { print; f = 0 }
' simulations/thm65_k1_sharp.toml >"$SPEC"
grep -q '^\[full\]' "$SPEC" || fail "could not derive the small spec"

# --- unsharded reference ----------------------------------------------------------------------
t0=$SECONDS
"$DPSGD_LAB" run "$SPEC" --full --quiet --out "$TMP/whole" >/dev/null ||
  fail "the unsharded run of $SPEC failed"
say "unsharded run: $((SECONDS - t0)) s"

# Waits until job $1 (every task of an array) has left the queue; says its final states.
wait_job() {
  local id=$1 what=$2 deadline=$((SECONDS + TIMEOUT))
  while squeue -h -j "$id" 2>/dev/null | grep -q .; do
    [ $SECONDS -lt $deadline ] || fail "$what (job $id) not finished after ${TIMEOUT} s"
    sleep 1
  done
  say "$what (job $id): $(scontrol -o show job "$id" | grep -o 'JobState=[A-Z_]*' | sort | uniq -c | tr -s ' \n' ' ')"
}
# The state of job $1: COMPLETED only if every task of it completed with exit code 0.
job_ok() {
  local lines
  lines=$(scontrol -o show job "$1")
  [ -n "$lines" ] && ! grep -v 'JobState=COMPLETED' <<<"$lines" | grep -q . &&
    ! grep -v 'ExitCode=0:0' <<<"$lines" | grep -q .
}

# --- the README's commands: the array, then the merge that waits for it -------------------------
OUT=$TMP/sharded
t0=$SECONDS
export DPSGD_SPEC=$SPEC DPSGD_OUT=$OUT
# The file as docs/cluster.md shows it; only the resources are sized to this node on the command line.
array=$(sbatch --parsable --array=1-"$SHARDS" --cpus-per-task=1 --time=00:30:00 \
  --output="$TMP/logs/%x-%A_%a.out" scripts/verify-array.sbatch) || fail "sbatch of the array failed"
merge=$(sbatch --parsable --dependency=afterok:"$array" --job-name=dpsgd-merge --time=00:10:00 \
  --output="$TMP/logs/%x-%j.out" \
  --wrap "\"$DPSGD_LAB\" merge \"$SPEC\" --full --out \"$OUT\"") || fail "sbatch of the merge failed"
say "submitted array job $array ($SHARDS shards) and merge job $merge (afterok:$array)"
wait_job "$array" "array"
job_ok "$array" || fail "array job $array did not complete: $(scontrol -o show job "$array" | grep -o 'JobState=[A-Z_]* .*ExitCode=[0-9:]*' | head -3)"
wait_job "$merge" "merge"
job_ok "$merge" ||
  fail "merge job $merge did not complete; its output: $(tr '\n' ' ' <"$TMP/logs/dpsgd-merge-$merge.out")"
say "array + merge through Slurm: $((SECONDS - t0)) s"

# --- the merged folder is the unsharded one, byte for byte --------------------------------------
n=0
names=
for f in "$TMP/whole"/*; do
  b=$(basename "$f")
  cmp -s "$f" "$OUT/$b" || fail "merged $b differs from the unsharded run's (or is missing)"
  n=$((n + 1))
  names="$names $b"
done
[ $n -ge 5 ] || fail "the unsharded run wrote only $n files"
for f in "$OUT"/*; do
  b=$(basename "$f")
  case "$b" in shard-*-of-"$SHARDS".jsonl) continue ;; esac
  [ -e "$TMP/whole/$b" ] || fail "the merged folder has $b, which the unsharded run does not write"
done
say "merged folder = unsharded folder, byte for byte ($n files:$names)"

# --- a broken merge: shard 2 deleted; the merge job must fail and name the shard ------------------
BROKEN=$TMP/broken
mkdir -p "$BROKEN"
cp "$OUT"/shard-*.jsonl "$BROKEN"/
rm "$BROKEN/shard-2-of-$SHARDS.jsonl"
bad=$(sbatch --parsable --job-name=dpsgd-merge-broken --time=00:10:00 \
  --output="$TMP/logs/%x-%j.out" \
  --wrap "\"$DPSGD_LAB\" merge \"$SPEC\" --full --out \"$BROKEN\"") || fail "sbatch of the merge failed"
wait_job "$bad" "merge with shard 2 deleted"
if job_ok "$bad"; then
  fail "the merge with shard-2-of-$SHARDS.jsonl deleted succeeded"
fi
msg=$(cat "$TMP/logs/dpsgd-merge-broken-$bad.out")
grep -q "shard 2 of $SHARDS" <<<"$msg" ||
  fail "the failed merge does not name the missing shard 2 of $SHARDS: $msg"
[ ! -e "$BROKEN/results.jsonl" ] || fail "the failed merge wrote results.jsonl"
say "it failed as it must: $msg"

say "PASS in $((SECONDS - START)) s ($SLURM_VERSION, $SHARDS shards)"
