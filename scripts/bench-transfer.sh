#!/usr/bin/env bash
# Benchmark (NOT run in CI): gpurent put/get against OpenSSH's scp, scp -r and sftp on the same
# loopback sshd, directly and through the userspace delay proxy at 50 ms RTT, in one run.
# Needs root, openssh-server and the gputest user (scripts/setup-test-host.sh).
# Env: BIG_MIB (default 256), SMALL_N (default 10000), SLOW_SMALL_N (default 500), RUNS (3).
# Prints a table of medians and ratios (gpurent / OpenSSH; below 1 means gpurent is faster).
set -euo pipefail
cd "$(dirname "$0")/.."
BIG_MIB=${BIG_MIB:-256}; SMALL_N=${SMALL_N:-10000}; SLOW_SMALL_N=${SLOW_SMALL_N:-500}; RUNS=${RUNS:-3}
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-target}
cargo build -q --release -p gpurent-cli --bin gpurent -p gpurent-testhost --bin bench-host
BIN="$CARGO_TARGET_DIR/release"
W=$(mktemp -d /dev/shm/gpurent-bench.XXXXXX)
trap 'exec 3>&-; sleep 0.5; rm -rf "$W"' EXIT
mkfifo "$W/ctl"
"$BIN/bench-host" 25 < "$W/ctl" > "$W/host.env" &
exec 3>"$W/ctl"
for _ in $(seq 100); do grep -q READY "$W/host.env" 2>/dev/null && break; sleep 0.1; done
# shellcheck disable=SC1091
source "$W/host.env"
G="$BIN/gpurent --data-dir $W/data"
$G host add "ssh -p $PORT gputest@127.0.0.1" --label direct --trust "$FP" --json >/dev/null
$G host add "ssh -p $PROXY_PORT gputest@127.0.0.1" --label slow --trust "$FP" --json >/dev/null
SSHO=(-i "$KEY" -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o BatchMode=yes -o LogLevel=ERROR)

echo "making data: ${BIG_MIB} MiB file, ${SMALL_N} files of 1-64 KiB" >&2
mkdir -p "$W/src"
head -c "$((BIG_MIB * 1048576))" /dev/urandom > "$W/src/big.bin"
python3 - "$W/src" "$SMALL_N" "$SLOW_SMALL_N" <<'PY'
import os, random, sys
root, n, slow = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
random.seed(1)
for name, count in (("small", n), ("slowsmall", slow)):
    for i in range(count):
        d = os.path.join(root, name, "d%02d" % (i % 50))
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "f%05d.bin" % i), "wb") as f:
            f.write(os.urandom(random.randint(1024, 65536)))
PY

median() { sort -n | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
timeit() { local t0 t1; t0=$(date +%s.%N); "$@" >/dev/null 2>"$W/err" || { cat "$W/err" >&2; return 1; }; t1=$(date +%s.%N); echo "$t1 - $t0" | bc; }
fresh() { rm -rf "$HOME_DIR/dst" "$W/back"; mkdir -p "$HOME_DIR/dst" "$W/back"; chown gputest "$HOME_DIR/dst"; $G transfers >/dev/null; }

run_case() { # name label port item kind(file|tree) runs
  local name=$1 label=$2 port=$3 item=$4 kind=$5 runs=$6 r g o s
  local rflag=(); [ "$kind" = tree ] && rflag=(-r)
  for dir in up down; do
    local gs=() os=() ss=()
    for ((r = 0; r < runs; r++)); do
      fresh
      if [ $dir = up ]; then
        gs+=("$(timeit $G put $label "$W/src/$item" "$HOME_DIR/dst" --overwrite -i "$KEY")")
        fresh
        os+=("$(timeit scp -q "${rflag[@]}" -P "$port" "${SSHO[@]}" "$W/src/$item" "gputest@127.0.0.1:$HOME_DIR/dst/")")
        if [ "$kind" = file ]; then fresh
          ss+=("$(timeit sftp -q -b <(echo "put $W/src/$item $HOME_DIR/dst/") -P "$port" "${SSHO[@]}" gputest@127.0.0.1)"); fi
      else
        cp -r "$W/src/$item" "$HOME_DIR/dst/" && chown -R gputest "$HOME_DIR/dst"
        rm -rf "$W/back"; mkdir -p "$W/back"
        gs+=("$(timeit $G get $label "$HOME_DIR/dst/$item" "$W/back" --overwrite -i "$KEY")")
        rm -rf "$W/back"; mkdir -p "$W/back"
        os+=("$(timeit scp -q "${rflag[@]}" -P "$port" "${SSHO[@]}" "gputest@127.0.0.1:$HOME_DIR/dst/$item" "$W/back/")")
        if [ "$kind" = file ]; then rm -rf "$W/back"; mkdir -p "$W/back"
          ss+=("$(timeit sftp -q -b <(echo "get $HOME_DIR/dst/$item $W/back/") -P "$port" "${SSHO[@]}" gputest@127.0.0.1)"); fi
      fi
    done
    g=$(printf '%s\n' "${gs[@]}" | median); o=$(printf '%s\n' "${os[@]}" | median)
    s=-; [ ${#ss[@]} -gt 0 ] && s=$(printf '%s\n' "${ss[@]}" | median)
    local scpname=scp; [ "$kind" = tree ] && scpname="scp -r"
    printf '| %s | %s | %.2f s | %.2f s (%s) | %s | %.2f |' "$name" "$dir" "$g" "$o" "$scpname" \
      "$( [ "$s" = - ] && echo - || printf '%.2f s' "$s")" "$(echo "$g / $o" | bc -l)"
    [ "$s" != - ] && printf ' %.2f |\n' "$(echo "$g / $s" | bc -l)" || printf ' - |\n'
  done
}

echo "| case | dir | gpurent | OpenSSH scp | sftp | gpurent/scp | gpurent/sftp |"
echo "| --- | --- | --- | --- | --- | --- | --- |"
run_case "${BIG_MIB} MiB, loopback" direct "$PORT" big.bin file "$RUNS"
run_case "${BIG_MIB} MiB, 50 ms RTT" slow "$PROXY_PORT" big.bin file "$RUNS"
run_case "${SMALL_N} files 1-64 KiB, loopback" direct "$PORT" small tree "$RUNS"
run_case "${SLOW_SMALL_N} files 1-64 KiB, 50 ms RTT" slow "$PROXY_PORT" slowsmall tree 1
