#!/bin/sh
# gpurent guard: stops paying for a machine nobody uses. POSIX sh, no Python. Installed by gpurent
# in ~/.gpurent/guard/ with guard.conf beside it (see docs/guard.md in the gpurent repository).
#
#   guard.sh start   start the loop unless it already runs: through its systemd unit where one is
#                    installed (so it is the unit's, never a child of the SSH session that ran
#                    start, and never two), else detached (setsid, else nohup). Not while the file
#                    `off` is there: the user switched the guard off (only `gpurent guard set`
#                    removes it), so a boot hook left behind never brings it back
#   guard.sh run     the loop itself (what start detaches; the unit's ExecStart)
#   guard.sh stop    stop the loop (and the unit)
#   guard.sh boot    make a reboot start it again: systemd unit (root + systemd), else crontab @reboot
#                    (only where a cron daemon runs)
#   guard.sh unboot  undo boot
#   guard.sh state   one line: running=1|0 pid=N boot=systemd|crontab|none
#   guard.sh provider  the provider API call of ACTION=provider, now (what the loop runs)
#
# Every PERIOD seconds it samples each signal; the machine is idle only when all agree:
#   gpu       every GPU below UTIL_BELOW %, holding at most MEM_BASELINE_MIB of memory, and no
#             compute process (the GPU_CMD / APPS_CMD queries, each cut off after SMI_TIMEOUT s)
#   ssh       no ESTABLISHED TCP connection on PORTS older than CONN_MIN_AGE s that still carries
#             activity: a login whose terminal had no input for INACTIVE s no longer counts, nor
#             a connection without a terminal (VS Code remote, a port forward) that moved at most
#             CONN_BYTES bytes a sample for INACTIVE s (per-socket bytes from `ss -tin`; where
#             ss is missing or fails such a connection cannot be judged and counts as busy)
#   ollama    nothing loaded (/api/ps) when something listens on OLLAMA_PORT
#   jupyter   ipykernel processes below JUPYTER_CPU_BUSY % CPU
#   cpu       the machine's own work below CPU_BUSY % of one core (cgroup cpu.stat, else /proc/stat)
#   net       traffic below NET_BUSY_KBPS KiB/s on every interface but lo (/proc/net/dev)
#   keepalive the file ~/.gpurent/keepalive exists (the user's own "keep it running")
# A signal it cannot read counts as busy. Time is measured on a monotonic clock (/proc/uptime
# deltas, kept in `mono` across restarts; a wall-clock step moves nothing). After IDLE seconds of
# idleness, or DEADLINE_IN seconds after the deadline was set (whatever the signals say; once: the
# file deadline.fired records it, so a restart or reboot never fires it again), it runs ACTION
# (cut off after ACTION_TIMEOUT s) — after a warning WARN seconds before (wall, and the file
# `warning`), and not while the file `snooze` holds a unix time in the future. One JSON line per
# decision goes to decisions.log; the last GPU sample, as nvidia-smi printed it, to gpu.csv and
# apps.csv.

DIR=$(cd "$(dirname "$0")" && pwd) || exit 1
CONF="$DIR/guard.conf"
KEEPALIVE="${DIR%/*}/keepalive"

defaults() {
  PERIOD=30; IDLE=1800; UTIL_BELOW=5; DEADLINE_IN=; DEADLINE_ID=; WARN=120; CONN_MIN_AGE=10; PORTS=22
  ACTION=poweroff; GUARD_PATH=; OLLAMA_PORT=11434; JUPYTER_CPU_BUSY=5; REACT=600; PROC=/proc
  LOG_MAX=5000; PROVIDER_METHOD=; PROVIDER_URL=; PROVIDER_BODY=; PROVIDER_CRED=; PROVIDER_CRED_VAR=; HTTP_TOOL=
  PROVIDER_AUTH=bearer; PROVIDER_OK=
  MEM_BASELINE_MIB=1024; CPU_BUSY=50; NET_BUSY_KBPS=50; INACTIVE=7200; SYS_ROOT=; SS=ss; CONN_BYTES=2048
  SMI_TIMEOUT=20; ACTION_TIMEOUT=120; WALL_EVERY=1800
  SYSTEMD_DIR=/run/systemd/system; UNIT_DIR=/etc/systemd/system; RECORD_POWEROFF=
  GPU_CMD='nvidia-smi --query-gpu=index,utilization.gpu,memory.used --format=csv,nounits'
  APPS_CMD='nvidia-smi --query-compute-apps=pid --format=csv,nounits'
}

load() {
  defaults
  # shellcheck disable=SC1090
  [ -r "$CONF" ] && . "$CONF"
  [ -n "$GUARD_PATH" ] && PATH=$GUARD_PATH && export PATH
  case "$PERIOD" in ''|*[!0-9]*|0) PERIOD=30 ;; esac
}

pid_alive() { # PID: running and ours
  [ -n "$1" ] && kill -0 "$1" 2>/dev/null || return 1
  [ -r "/proc/$1/cmdline" ] || return 0
  tr '\000' ' ' < "/proc/$1/cmdline" | grep -q 'guard.sh'
}

running_pid() {
  p=$(cat "$DIR/pid" 2>/dev/null)
  pid_alive "$p" && echo "$p"
}

hexports() { for p in $1; do printf '%04X ' "$p"; done; }

nap() { # CENTISECONDS (1-100): sleep about that long; sets napped to the centiseconds slept
  # (a sleep without fractions sleeps 1 s)
  case "$1" in ?) _s=0.0$1 ;; 100) _s=1 ;; *) _s=0.$1 ;; esac
  if sleep "$_s" 2>/dev/null; then napped=$1
  else sleep 1; napped=100; fi
}

limited() { # SECONDS OUT CMD...: run CMD (stdout and stderr to OUT); its status, or 124 when it
  # ran past SECONDS. Then it is killed and NOT waited for: a command stuck in the kernel (nvidia-smi
  # with a GPU off the bus) cannot be killed, and timeout(1) would wait with it. Its pid is left in
  # OUT.pid so the caller can see it is still stuck.
  _t=$1; _o=$2; shift 2
  rm -f "$_o.rc" "$_o.pid"
  ( "$@" > "$_o" 2>&1 < /dev/null & echo $! > "$_o.pid"; wait $!; echo $? > "$_o.rc" ) &
  _w=$!; _i=0
  while [ ! -s "$_o.rc" ]; do
    if [ $_i -ge $((_t * 100)) ]; then
      kill -9 "$(cat "$_o.pid" 2>/dev/null)" 2>/dev/null; kill -9 $_w 2>/dev/null
      return 124
    fi
    if [ $_i -lt 30 ]; then nap 2; else nap 10; fi
    _i=$((_i + napped))
  done
  wait $_w 2>/dev/null
  _r=$(cat "$_o.rc"); rm -f "$_o.rc" "$_o.pid"
  return "${_r:-1}"
}

clock() { # mono: seconds on the guard's monotonic clock, kept in `mono` across restarts: uptime
  # deltas (a wall-clock step moves nothing; the time the machine was off does not count); up:
  # uptime in 1/100 s; bid: this boot's id
  up=$(awk '{ printf "%d", $1 * 100 }' /proc/uptime 2>/dev/null)
  bid=$(cat /proc/sys/kernel/random/boot_id 2>/dev/null); bid=${bid:-noboot}
  set -- $(cat "$DIR/mono" 2>/dev/null)
  mono_cs=${3:-0}; case "$mono_cs" in ''|*[!0-9]*) mono_cs=0 ;; esac
  if [ -n "$up" ]; then
    case "$2" in ''|*[!0-9]*) ;; *) [ "$1" = "$bid" ] && [ "$up" -ge "$2" ] && mono_cs=$((mono_cs + up - $2)) ;; esac
  else
    mono_cs=$((mono_cs + PERIOD * 100)) # no /proc/uptime: count the period
  fi
  echo "$bid ${up:-0} $mono_cs" > "$DIR/mono.new" && mv "$DIR/mono.new" "$DIR/mono"
  mono=$((mono_cs / 100))
}

# --- signals ----------------------------------------------------------------------------------

smi() { # OUT CMD...: one nvidia-smi query, cut off after SMI_TIMEOUT s (status 124)
  limited "$SMI_TIMEOUT" "$@"; _s=$?
  [ $_s = 124 ] && cat "$1.pid" > "$DIR/smi.hung" 2>/dev/null
  return $_s
}

sample_gpu() {
  gpu=unreadable; gpu_util=; gpu_procs=; gpu_mem=
  set -- $GPU_CMD
  command -v "$1" >/dev/null 2>&1 || { gpu_why=no_nvidia_smi; return; }
  # An nvidia-smi still stuck from an earlier sample: another one would only hang beside it.
  hp=$(cat "$DIR/smi.hung" 2>/dev/null)
  if [ -n "$hp" ] && kill -0 "$hp" 2>/dev/null; then gpu_why=hung; return; fi
  rm -f "$DIR/smi.hung"
  # shellcheck disable=SC2086
  smi "$DIR/.gpu.out" $GPU_CMD; rc=$?
  out=$(cat "$DIR/.gpu.out" 2>/dev/null)
  printf '%s\n' "$out" > "$DIR/gpu.csv"
  [ $rc = 124 ] && { gpu_why=hung; return; }
  [ $rc = 0 ] || { gpu_why=query_failed; return; }
  # Columns are found by their header names (units such as " [%]" dropped), never by position.
  # [N/A] (MIG instances, vGPU guests) cannot be read: busy, with its own reason.
  set -- $(printf '%s\n' "$out" | awk -F', *' '
    NR == 1 { for (i = 1; i <= NF; i++) { h = $i; sub(/ *\[.*$/, "", h); if (h == "utilization.gpu") c = i; if (h == "memory.used") m = i }; next }
    NF == 0 { next }
    { n++
      if (!c || !m) { bad = "unparsable"; next }
      if ($c ~ /N\/A/ || $m ~ /N\/A/) { na = 1; next }
      if ($c !~ /^[0-9]+(\.[0-9]+)?$/ || $m !~ /^[0-9]+(\.[0-9]+)?$/) { bad = "unparsable"; next }
      if ($c + 0 > u) u = $c + 0
      if ($m + 0 > mem) mem = $m + 0 }
    END { if (bad != "" || n == 0) print "x unparsable"; else if (na) print "x not_available"; else print u + 0, mem + 0 }')
  if [ "$1" = x ]; then gpu_why=$2; return; fi
  gpu_util=$1; gpu_mem=$2
  # shellcheck disable=SC2086
  smi "$DIR/.apps.out" $APPS_CMD; rc=$?
  apps=$(cat "$DIR/.apps.out" 2>/dev/null)
  printf '%s\n' "$apps" > "$DIR/apps.csv"
  [ $rc = 124 ] && { gpu_why=hung; return; }
  [ $rc = 0 ] || { gpu_why=apps_failed; return; }
  # Rows after the header with as many cells (a one-cell "No running processes found" is none).
  gpu_procs=$(printf '%s\n' "$apps" | awk -F', *' 'NR == 1 { h = NF; next } NF >= h && NF > 0 { n++ } END { print n + 0 }')
  if awk -v u="$gpu_util" -v t="$UTIL_BELOW" 'BEGIN { exit !(u + 0 >= t + 0) }'; then
    gpu=busy; gpu_why=utilization
  elif [ "$gpu_procs" -gt 0 ]; then
    gpu=busy; gpu_why=processes
  elif awk -v m="$gpu_mem" -v b="$MEM_BASELINE_MIB" 'BEGIN { exit !(m + 0 > b + 0) }'; then
    # A served model between requests holds its memory at 0 %, and in a container nvidia-smi
    # often lists no process at all.
    gpu=busy; gpu_why=memory
  else
    gpu=idle; gpu_why=
  fi
}

tcp_files() {
  for f in "$PROC/net/tcp" "$PROC/net/tcp6"; do [ -r "$f" ] && printf '%s ' "$f"; done
}

ssh_ttys() { # "CLIENT_PORT SERVER_PORT ATIME" (ports in hex, atime of the terminal: its last input)
  # for each login with a terminal whose processes we can read: their SSH_CONNECTION names the
  # connection, their stdin the terminal. Logins we cannot read stay unmeasured (= active).
  command -v stat >/dev/null 2>&1 || return 0
  for e in $(grep -l 'SSH_CONNECTION=' "$PROC"/[0-9]*/environ 2>/dev/null); do
    t=$(readlink "${e%/environ}/fd/0" 2>/dev/null) || continue
    case "$t" in /dev/pts/[0-9]*|/dev/tty[0-9]*) ;; *) continue ;; esac
    a=$(stat -c %X "$t" 2>/dev/null) || continue
    c=$(tr '\000' '\n' < "$e" 2>/dev/null | sed -n 's/^SSH_CONNECTION=//p' | head -n 1)
    # shellcheck disable=SC2086
    set -- $c
    [ -n "$4" ] && printf '%04X %04X %s\n' "$2" "$4" "$a"
  done
}

ssh_traffic() { # "CLIENT_PORT SERVER_PORT BYTES" (ports in hex; bytes sent and received so
  # far) for each established TCP socket whose local port is in PORTS, from `ss -tin` (iproute2):
  # a socket's line "[State] Recv-Q Send-Q LOCAL:PORT PEER:PORT [Process]", then an indented
  # line of TCP info with bytes_acked:N and bytes_received:N (each absent while still 0). No ss,
  # or ss failing: nothing, and connections without a terminal stay unmeasured (= active);
  # ssh_traffic_src says which (ss, no_ss, ss_failed). There is no other way for a login user:
  # sshd makes itself non-dumpable, so its /proc/PID/io and fd are readable only with
  # CAP_SYS_PTRACE (root on a VM, not root in a default Docker container).
  ssh_traffic_src=no_ss
  command -v "$SS" >/dev/null 2>&1 || return 0
  ssh_traffic_src=ss_failed
  limited 10 "$DIR/.ss.out" "$SS" -tin state established || return 0
  ssh_traffic_src=ss
  awk -v ports="$PORTS" '
    BEGIN { n = split(ports, a, " "); for (i = 1; i <= n; i++) want[a[i]] = 1 }
    function port(x) { sub(/.*:/, "", x); return x }
    /^[ \t]/ { if (k != "") { b = 0
                  if (match($0, /bytes_acked:[0-9]+/)) b += substr($0, RSTART + 12, RLENGTH - 12)
                  if (match($0, /bytes_received:[0-9]+/)) b += substr($0, RSTART + 15, RLENGTH - 15)
                  printf "%s %.0f\n", k, b }
                k = ""; next }
    { k = ""; loc = ""; peer = ""
      for (i = 1; i <= NF; i++) if ($i ~ /:[0-9]+$/) { if (loc == "") loc = $i; else if (peer == "") peer = $i }
      if (peer == "") next
      lp = port(loc); pp = port(peer)
      if (lp in want) k = sprintf("%04X %04X", pp, lp) }' "$DIR/.ss.out"
}

sample_ssh() {
  ssh=unreadable; ssh_conns=; ssh_new=0; ssh_inactive=0; ssh_unmeasured=; ssh_traffic_src=
  files=$(tcp_files)
  [ -n "$files" ] || return
  ssh_ttys > "$DIR/ttys" 2>/dev/null
  ssh_traffic > "$DIR/traffic" 2>/dev/null
  # ESTABLISHED (01) with a local port in PORTS. A connection keeps the machine alive once it is
  # CONN_MIN_AGE old (first seen in an earlier sample), so gpurent's own short status checks never
  # do; a younger one only holds the action back for that sample (someone just logged in). One
  # whose terminal had no input for INACTIVE s (a laptop lid closed on it) no longer counts: its
  # input time is when the terminal's atime last changed, on the monotonic clock. A connection
  # without a terminal (VS Code remote, a port forward) is judged by its traffic instead: its last
  # activity is the last sample in which it moved more than CONN_BYTES bytes (keep-alives move
  # less). One measured neither way counts as busy. conns:
  # KEY FIRST_SEEN ATIME LAST_INPUT WARNED BYTES.
  # shellcheck disable=SC2086
  counts=$(awk -v ports="$(hexports "$PORTS")" -v now="$mono" -v age="$CONN_MIN_AGE" \
      -v inactive="$INACTIVE" -v warn="$WARN" -v prev="$DIR/conns" -v ttys="$DIR/ttys" \
      -v traffic="$DIR/traffic" -v quiet="$CONN_BYTES" \
      -v out="$DIR/conns.new" -v wout="$DIR/conns.warn" '
    BEGIN { n = split(ports, a, " "); for (i = 1; i <= n; i++) want[a[i]] = 1
            while ((getline line < prev) > 0) { split(line, f, " "); seen[f[1]] = f[2]; pat[f[1]] = f[3]; pli[f[1]] = f[4]; pw[f[1]] = f[5]; pby[f[1]] = f[6] }
            while ((getline line < ttys) > 0) { split(line, f, " "); k = f[1] " " f[2]; if (!(k in tty) || f[3] > tty[k]) tty[k] = f[3] }
            while ((getline line < traffic) > 0) { split(line, f, " "); trf[f[1] " " f[2]] = f[3] }
            printf "" > out; printf "" > wout }
    FNR > 1 && $4 == "01" { split($2, l, ":"); if (l[2] in want) {
            split($3, r, ":"); k = $2 "-" $3; first = (k in seen) ? seen[k] : now
            at = ""; li = now; w = 0; by = "-"; measured = 0
            if ((r[2] " " l[2]) in tty) {
              at = tty[r[2] " " l[2]]; measured = 1
              if ((k in pat) && pat[k] == at && pli[k] != "") { li = pli[k]; w = pw[k] + 0 }
            } else if ((r[2] " " l[2]) in trf) {
              by = trf[r[2] " " l[2]]; measured = 1
              if ((k in pby) && pby[k] != "-" && pby[k] != "" && pli[k] != "" && by - pby[k] <= quiet + 0) { li = pli[k]; w = pw[k] + 0 }
            }
            print k, first, (at == "" ? "-" : at), li, w, by > out
            if (now - first < age) y++
            else if (!measured || now - li < inactive) {
              c++; if (!measured) u++
              if (measured && now - li >= inactive - warn && !w) { print k, inactive - (now - li) > wout; w = 1 }
            } else {
              z++
              if (!w) { print k, 0 > wout; w = 1 }
            } } }
    END { close(out); print c + 0, y + 0, z + 0, u + 0 }' $files) || return
  # The warned flag goes in with the warning (a second pass would race the connection list).
  if [ -s "$DIR/conns.warn" ]; then
    awk -v wf="$DIR/conns.warn" 'BEGIN { while ((getline line < wf) > 0) { split(line, f, " "); w[f[1]] = 1 } }
      { if ($1 in w) $5 = 1; print }' "$DIR/conns.new" > "$DIR/conns.tmp" && mv "$DIR/conns.tmp" "$DIR/conns.new"
    left=$(awk 'NR == 1 { print int($2 / 60) + 1 }' "$DIR/conns.warn")
    warn "gpurent guard: an SSH session here has had no input (or traffic) for a while; in about $left min it no longer keeps this machine running."
  fi
  mv "$DIR/conns.new" "$DIR/conns"
  set -- $counts; ssh_conns=$1; ssh_new=$2; ssh_inactive=$3; ssh_unmeasured=$4
  if [ "$ssh_conns" -gt 0 ]; then ssh=busy; else ssh=idle; fi
}

listening() { # PORT: something listens on it (LISTEN = 0A)
  files=$(tcp_files)
  [ -n "$files" ] || return 2
  # shellcheck disable=SC2086
  awk -v p="$(hexports "$1" | tr -d ' ')" 'FNR > 1 && $4 == "0A" { split($2, l, ":"); if (l[2] == p) f = 1 } END { exit !f }' $files
}

sample_ollama() {
  listening "$OLLAMA_PORT"; rc=$?
  [ $rc = 2 ] && { ollama=unreadable; return; }
  [ $rc = 1 ] && { ollama=absent; return; }
  url="http://127.0.0.1:$OLLAMA_PORT/api/ps"
  if command -v curl >/dev/null 2>&1; then body=$(curl -q -fsS -m 5 "$url" 2>/dev/null)
  elif command -v wget >/dev/null 2>&1; then body=$(wget -q -T 5 -O - "$url" 2>/dev/null)
  else ollama=unreadable; return; fi
  [ $? = 0 ] || { ollama=unreadable; return; }
  compact=$(printf '%s' "$body" | tr -d ' \n\r\t')
  case "$compact" in
    *'"models":[]'*|*'"models":null'*) ollama=idle ;;
    *'"models":['*) ollama=busy ;;
    *) ollama=unreadable ;;
  esac
}

sample_jupyter() {
  jupyter=absent; ticks=0; found=0
  [ -r "$PROC/self/cmdline" ] || { jupyter=unreadable; return; }
  # One grep over every command line ('ipyker[n]el' so grep does not find its own).
  for f in $(grep -l 'ipyker[n]el' "$PROC"/[0-9]*/cmdline 2>/dev/null); do
    t=$(awk '{ s = $0; sub(/.*\) /, "", s); split(s, f, " "); print f[12] + f[13] }' "${f%/cmdline}/stat" 2>/dev/null)
    [ -n "$t" ] && { found=1; ticks=$((ticks + t)); }
  done
  prev=$(cat "$DIR/jupyter.prev" 2>/dev/null)
  echo "$bid $up $ticks" > "$DIR/jupyter.prev"
  [ $found = 1 ] || return
  set -- $prev
  if [ "$1" != "$bid" ] || [ -z "$3" ] || [ -z "$up" ] || [ "$up" -le "$2" ]; then jupyter=unreadable; return; fi
  hz=$(getconf CLK_TCK 2>/dev/null); hz=${hz:-100}
  if awk -v d=$((ticks - $3)) -v s=$((up - $2)) -v hz="$hz" -v t="$JUPYTER_CPU_BUSY" \
      'BEGIN { exit !(d / hz / (s / 100) * 100 >= t + 0) }'; then jupyter=busy; else jupyter=idle; fi
}

rate() { # NAME VALUE [SOURCE]: VALUE's growth per second since the last sample (NAME.prev), or
  # nothing (the first sample, after a reboot, a counter that went back, or another source)
  _v=$2; _src=${3:--}
  _p=$(cat "$DIR/$1.prev" 2>/dev/null)
  echo "$bid ${up:-0} ${_v:--} $_src" > "$DIR/$1.prev"
  [ -n "$_v" ] && [ -n "$up" ] || return 0
  # shellcheck disable=SC2086
  set -- $_p
  [ "$1" = "$bid" ] && [ "${4:-}" = "$_src" ] || return 0
  case "${3:-}" in ''|-) return 0 ;; esac
  awk -v a="$3" -v b="$_v" -v t0="$2" -v t1="$up" 'BEGIN { if (t1 > t0 && b >= a) printf "%.3f", (b - a) / ((t1 - t0) / 100) }'
}

sample_cpu() { # the machine's own CPU work, in % of one core over the last period: cgroup v2
  # cpu.stat (in a container: its own processes), cgroup v1 cpuacct, else /proc/stat (a VM: all)
  cpu=unreadable; cpu_pct=; cpu_src=; cpu_why=
  cg="$SYS_ROOT/sys/fs/cgroup"
  if [ -r "$cg/cpu.stat" ] && grep -q '^usage_usec ' "$cg/cpu.stat" 2>/dev/null; then
    cpu_src=cgroup; used=$(awk '$1 == "usage_usec" { printf "%.0f", $2 }' "$cg/cpu.stat")
  elif [ -r "$cg/cpuacct/cpuacct.usage" ]; then
    cpu_src=cgroup1; used=$(awk '{ printf "%.0f", $1 / 1000 }' "$cg/cpuacct/cpuacct.usage")
  elif [ -r "$SYS_ROOT/proc/stat" ]; then
    hz=$(getconf CLK_TCK 2>/dev/null); hz=${hz:-100}
    cpu_src=stat; used=$(awk -v hz="$hz" '$1 == "cpu" { printf "%.0f", ($2 + $3 + $4 + $7 + $8) * 1000000 / hz }' "$SYS_ROOT/proc/stat")
  else
    used=
  fi
  r=$(rate cpu "$used" "$cpu_src") # microseconds of CPU per second
  # Read, but no earlier sample to compare with (the first one, after a reboot): no reading yet.
  [ -n "$r" ] || { [ -n "$used" ] && cpu_why=no_reading_yet; return; }
  cpu_pct=$(awk -v r="$r" 'BEGIN { printf "%.1f", r / 10000 }')
  if awk -v p="$cpu_pct" -v t="$CPU_BUSY" 'BEGIN { exit !(p + 0 >= t + 0) }'; then cpu=busy; else cpu=idle; fi
}

sample_net() { # bytes in and out on every interface but lo (a download or upload under nohup)
  net=unreadable; net_kbps=; net_why=
  f="$SYS_ROOT/proc/net/dev"
  [ -r "$f" ] || { rate net ""; return; }
  bytes=$(awk 'NR > 2 { s = $0; sub(/^ +/, "", s); i = index(s, ":"); if (!i) next
      if (substr(s, 1, i - 1) == "lo") next
      split(substr(s, i + 1), v, " "); b += v[1] + v[9] } END { printf "%.0f", b + 0 }' "$f")
  r=$(rate net "$bytes")
  [ -n "$r" ] || { [ -n "$bytes" ] && net_why=no_reading_yet; return; }
  net_kbps=$(awk -v r="$r" 'BEGIN { printf "%.1f", r / 1024 }')
  if awk -v k="$net_kbps" -v t="$NET_BUSY_KBPS" 'BEGIN { exit !(k + 0 >= t + 0) }'; then net=busy; else net=idle; fi
}

sample_keepalive() { if [ -e "$KEEPALIVE" ]; then keepalive=busy; else keepalive=idle; fi; }

deadline_state() { # dl_left: seconds to the deadline on the monotonic clock (empty: none, or it
  # already fired: dl_fired=1). The deadline's start is the monotonic time its id was first seen.
  dl_left=; dl_fired=
  case "$DEADLINE_IN" in ''|*[!0-9]*) return ;; esac
  # shellcheck disable=SC2046
  set -- $(cat "$DIR/deadline" 2>/dev/null)
  if [ "${1:-}" != "$DEADLINE_ID" ] || [ -z "${2:-}" ]; then
    # First sight, right after `guard set` started the loop: the start is moved back by the
    # seconds since the set (its host time is in the id), read on the wall clock this once.
    lag=0; set_at=${DEADLINE_ID%%-*}
    case "$set_at" in ''|*[!0-9]*) ;; *) lag=$((now - set_at)) ;; esac
    case "$lag" in -*) lag=0 ;; esac
    [ "$lag" -gt 600 ] && lag=0
    echo "$DEADLINE_ID $((mono - lag))" > "$DIR/deadline.new" && mv "$DIR/deadline.new" "$DIR/deadline"
    set -- "$DEADLINE_ID" $((mono - lag))
  fi
  if [ "$(cat "$DIR/deadline.fired" 2>/dev/null)" = "$DEADLINE_ID" ]; then dl_fired=1; return; fi
  dl_left=$((DEADLINE_IN - (mono - $2)))
}

snooze_state() { # snooze_left: seconds the snooze still holds. `snooze` holds a unix time (the
  # host's clock when it was written); it is turned into monotonic time when first seen.
  snooze_left=; snooze_until=
  s=$(cat "$DIR/snooze" 2>/dev/null); case "$s" in ''|*[!0-9]*) return ;; esac
  # shellcheck disable=SC2046
  set -- $(cat "$DIR/snooze.seen" 2>/dev/null)
  if [ "${1:-}" != "$s" ] || [ -z "${2:-}" ]; then
    set -- "$s" $((mono + s - now)); echo "$1 $2" > "$DIR/snooze.seen"
  fi
  [ "$2" -gt "$mono" ] && snooze_left=$(($2 - mono)) && snooze_until=$s
}

# --- decisions --------------------------------------------------------------------------------

num() { case "$1" in ''|*[!0-9.]*) printf null ;; *) printf '%s' "$1" ;; esac; }
plus() { [ -n "$2" ] && printf '%s' $(($1 + $2)); } # A B: A + B, or nothing without B

log() { # DECISION WHY [RC]
  printf '{"at":%s,"decision":"%s","why":"%s","gpu":"%s","gpu_why":"%s","gpu_util_max":%s,"gpu_mem_max":%s,"gpu_procs":%s,"ssh":"%s","ssh_conns":%s,"ssh_new":%s,"ssh_inactive":%s,"ssh_unmeasured":%s,"ssh_traffic":"%s","ollama":"%s","jupyter":"%s","cpu":"%s","cpu_why":"%s","cpu_pct":%s,"net":"%s","net_why":"%s","net_kbps":%s,"keepalive":"%s","idle_since":%s,"idle_s":%s,"deadline":%s,"deadline_fired":%s,"snooze_until":%s,"period_s":%s,"action_rc":%s,"mono":%s}\n' \
    "$now" "$1" "$2" "$gpu" "$gpu_why" "$(num "$gpu_util")" "$(num "$gpu_mem")" "$(num "$gpu_procs")" "$ssh" \
    "$(num "$ssh_conns")" "$(num "$ssh_new")" "$(num "$ssh_inactive")" "$(num "$ssh_unmeasured")" "$ssh_traffic_src" "$ollama" "$jupyter" "$cpu" "$cpu_why" "$(num "$cpu_pct")" \
    "$net" "$net_why" "$(num "$net_kbps")" "$keepalive" "$(num "$(plus "$now" "${idle_mono:+$((idle_mono - mono))}")")" "$(num "$IDLE")" \
    "$(num "$(plus "$now" "$dl_left")")" "$(if [ -n "$dl_fired" ]; then echo true; else echo false; fi)" "$(num "$snooze_until")" \
    "$PERIOD" "$(num "$3")" "$mono" >> "$DIR/decisions.log"
  n=$(wc -l < "$DIR/decisions.log")
  if [ "$n" -gt "$LOG_MAX" ]; then
    tail -n $((LOG_MAX / 2)) "$DIR/decisions.log" > "$DIR/decisions.tmp" && mv "$DIR/decisions.tmp" "$DIR/decisions.log"
  fi
}

warn() { # MESSAGE: in the file `warning`, and to open terminals — the same message at most every
  # WALL_EVERY seconds (a failing action must not broadcast every sample)
  printf '%s %s\n' "$now" "$1" > "$DIR/warning"
  if [ "$1" = "${walled_msg:-}" ] && [ -n "${walled_at:-}" ] && [ $((mono - walled_at)) -lt "$WALL_EVERY" ]; then return 0; fi
  walled_msg=$1; walled_at=$mono
  command -v wall >/dev/null 2>&1 && printf '%s\n' "$1" | wall 2>/dev/null
  return 0
}

envv() { # NAME: the variable from this environment, else from PID 1's (an SSH session in a
  # container may not carry the container's variables)
  eval "v=\${$1:-}"
  [ -n "$v" ] || v=$(tr '\000' '\n' < /proc/1/environ 2>/dev/null | sed -n "s/^$1=//p" | head -n 1)
  printf '%s' "$v"
}

provider_call() { # ACTION=provider: one HTTP call to the provider's API (PROVIDER_METHOD/URL/BODY)
  # with the configured credential: the instance's own key from the environment (PROVIDER_CRED=env,
  # PROVIDER_CRED_VAR names it) or the account key in provider.key (file). The key goes to curl/wget
  # in a 0600 config file, never on a command line, and the file is removed right after (also when
  # the call is cut off: the EXIT trap; a file left by a killed call is removed at the next start).
  case "$PROVIDER_CRED" in
    env) case "$PROVIDER_CRED_VAR" in ''|*[!A-Z0-9_]*) echo "bad credential variable"; return 3 ;; esac
         key=$(envv "$PROVIDER_CRED_VAR") ;;
    file) key=$(cat "$DIR/provider.key" 2>/dev/null) ;;
    *) echo "no provider credential configured"; return 3 ;;
  esac
  [ -n "$key" ] || { echo "the credential ($PROVIDER_CRED $PROVIDER_CRED_VAR) is empty"; return 3; }
  # Only token characters go into the curl/wget config (a quote or newline would break out of it).
  case "$key" in *[!A-Za-z0-9._~+/=-]*) echo "the credential has characters the guard will not pass on"; return 3 ;; esac
  # How the key travels: "Authorization: Bearer <key>", or the key alone (PROVIDER_AUTH=plain:
  # AutoDL, to which "Bearer <key>" is another, unknown token).
  case "$PROVIDER_AUTH" in plain) auth=$key ;; *) auth="Bearer $key" ;; esac
  cfg="$DIR/.http.$$"; old=$(umask); umask 077; rm -f "$DIR/provider.out"; code=
  trap 'rm -f "$cfg"' EXIT
  case "$HTTP_TOOL" in
    curl)
      # -q first: no ~/.curlrc (it could add a proxy, -k or an output file).
      printf 'header = "Authorization: %s"\n' "$auth" > "$cfg"
      if [ -n "$PROVIDER_BODY" ]; then
        code=$(curl -q -sS -K "$cfg" -X "$PROVIDER_METHOD" -H 'Content-Type: application/json' --data "$PROVIDER_BODY" \
          --max-time 30 -o "$DIR/provider.out" -w '%{http_code}' "$PROVIDER_URL")
      else
        code=$(curl -q -sS -K "$cfg" -X "$PROVIDER_METHOD" --max-time 30 -o "$DIR/provider.out" -w '%{http_code}' "$PROVIDER_URL")
      fi ;;
    wget)
      printf 'header = Authorization: %s\n' "$auth" > "$cfg"
      if [ -n "$PROVIDER_BODY" ]; then
        WGETRC="$cfg" wget -S -O "$DIR/provider.out" --timeout=30 --tries=1 --method="$PROVIDER_METHOD" \
          --header='Content-Type: application/json' --body-data="$PROVIDER_BODY" "$PROVIDER_URL" 2> "$DIR/provider.hdr"
      else
        WGETRC="$cfg" wget -S -O "$DIR/provider.out" --timeout=30 --tries=1 --method="$PROVIDER_METHOD" \
          "$PROVIDER_URL" 2> "$DIR/provider.hdr"
      fi
      code=$(awk '$1 ~ /^HTTP\// { c = $2 } END { print c }' "$DIR/provider.hdr") ;;
    *) rm -f "$cfg"; umask "$old"; echo "no HTTP tool configured"; return 4 ;;
  esac
  rm -f "$cfg"; umask "$old"
  echo "http ${code:-none} $PROVIDER_METHOD $PROVIDER_URL"
  dd if="$DIR/provider.out" bs=2000 count=1 2>/dev/null; echo
  case "$code" in
    2??) # A 2xx whose body says it failed (Vast answers {"success": false, ...}) did not act.
         if tr -d ' \n\r\t' < "$DIR/provider.out" 2>/dev/null | grep -q '"success":false'; then return 5; fi
         # A provider that answers a refusal with a 2xx and a failure word (AutoDL: any "code" but
         # "Success"): done only when the body says its success word (PROVIDER_OK).
         if [ -n "$PROVIDER_OK" ] && ! tr -d ' \n\r\t' < "$DIR/provider.out" 2>/dev/null | grep -qF "$PROVIDER_OK"; then
           return 5
         fi
         return 0 ;;
    *) return 1 ;;
  esac
}

act() { # WHY: run the action, cut off after ACTION_TIMEOUT s. A deadline is marked fired before
  # it runs (a poweroff may end the guard before it can write anything), unmarked if it failed.
  [ "$1" = deadline ] && echo "$DEADLINE_ID" > "$DIR/deadline.fired"
  # A power-off (RECORD_POWEROFF=1: `--action poweroff`) is recorded first — host time and this
  # boot's id — since it ends the guard: gpurent reads it on its next contact, and a record from
  # another boot proves the machine went off (billing of a pasted host stops from then).
  if [ "$RECORD_POWEROFF" = 1 ]; then echo "$now $bid" > "$DIR/poweroff.rec"; log poweroff "$1"; fi
  if [ "$ACTION" = provider ]; then limited "$ACTION_TIMEOUT" "$DIR/action.out" provider_call; rc=$?
  else limited "$ACTION_TIMEOUT" "$DIR/action.out" sh -c "$ACTION"; rc=$?; fi
  if [ $rc = 0 ]; then
    # The provider confirmed the stop/release: the account's full key (written with the user's
    # consent) leaves the disk now — a stopped Vast machine keeps its disk, which its host
    # operator can read. A later `gpurent guard set` puts it back.
    [ "$ACTION" = provider ] && [ "$PROVIDER_CRED" = file ] && rm -f "$DIR/provider.key"
    log act "$1" 0; acted=$mono
  else
    [ "$1" = deadline ] && rm -f "$DIR/deadline.fired"
    [ "$RECORD_POWEROFF" = 1 ] && rm -f "$DIR/poweroff.rec"
    log act_failed "$1" $rc
    warn "gpurent guard: the action failed (status $rc; see ~/.gpurent/guard/action.out). It is tried again every sample; this machine keeps billing."
  fi
}

loop() {
  trap '' HUP
  echo $$ > "$DIR/pid"
  rm -f "$DIR"/.http.*
  idle_mono=; warned=; acted=
  while :; do
    # One loop only: a loop whose pid file names another (a second start, `off` then `set`
    # within one period) leaves.
    [ "$(cat "$DIR/pid" 2>/dev/null)" = "$$" ] || exit 0
    load
    [ -f "$DIR/off" ] && { rm -f "$DIR/pid"; exit 0; }
    now=$(date +%s)
    clock
    sample_gpu; sample_ssh; sample_ollama; sample_jupyter; sample_cpu; sample_net; sample_keepalive
    deadline_state; snooze_state
    why=
    [ "$gpu" = idle ] || why="$why,gpu"
    [ "$ssh" = idle ] || why="$why,ssh"
    case $ollama in idle|absent) ;; *) why="$why,ollama" ;; esac
    case $jupyter in idle|absent) ;; *) why="$why,jupyter" ;; esac
    [ "$cpu" = idle ] || why="$why,cpu"
    [ "$net" = idle ] || why="$why,net"
    [ "$keepalive" = idle ] || why="$why,keepalive"
    why=${why#,}
    if [ -z "$why" ]; then idle_mono=${idle_mono:-$mono}; else idle_mono=; fi
    idle_for=; [ -n "$idle_mono" ] && idle_for=$((mono - idle_mono))
    lead=$WARN; [ $((IDLE / 2)) -lt "$lead" ] && lead=$((IDLE / 2))
    due=; soon=
    if [ -n "$dl_left" ] && [ "$dl_left" -le 0 ]; then due=deadline
    elif [ -n "$idle_for" ] && [ "$idle_for" -ge "$IDLE" ] && [ "${ssh_new:-0}" = 0 ]; then due=idle
    elif [ -n "$idle_for" ] && [ "$idle_for" -ge "$IDLE" ]; then why=ssh_new
    elif [ -n "$dl_left" ] && [ "$dl_left" -le "$WARN" ]; then soon=deadline
    elif [ -n "$idle_for" ] && [ "$idle_for" -ge $((IDLE - lead)) ]; then soon=idle
    fi
    if [ -n "$due" ] && [ -n "$snooze_left" ]; then log snoozed "$due"
    elif [ "$due" = idle ] && [ -n "$acted" ] && [ $((mono - acted)) -lt "$REACT" ]; then log acted "$due"
    elif [ -n "$due" ]; then
      what=$ACTION; [ "$ACTION" = provider ] && what="$PROVIDER_METHOD $PROVIDER_URL"
      if [ -z "$warned" ]; then warn "gpurent guard: acting now ($due): $what"; warned=$mono; log warn "$due"; fi
      act "$due"
    elif [ -n "$soon" ] && [ -z "$snooze_left" ] && [ -z "$warned" ]; then
      warn "gpurent guard: this machine will be stopped soon ($soon). Use it, or run: gpurent guard snooze HOST 30m"
      warned=$mono; log warn "$soon"
    elif [ "$why" = ssh_new ]; then log keep ssh_new
    else
      # Busy again cancels an idle warning (a deadline's stands).
      if [ -n "$why" ] && [ "$soon" != deadline ]; then warned=; acted=; rm -f "$DIR/warning"; fi
      if [ -z "$why" ]; then log idle "$soon"; else log keep "$why"; fi
    fi
    sleep "$PERIOD"
  done
}

cron_runs() { # a cron daemon is running (an @reboot line is only worth something then)
  for c in "${PROC:-/proc}"/[0-9]*/comm; do
    case "$(cat "$c" 2>/dev/null)" in cron|crond|cronie|fcron|dcron) return 0 ;; esac
  done
  return 1
}

UNIT=gpurent-guard.service

unit_here() { # the guard's systemd unit is installed and systemd runs
  [ -f "$UNIT_DIR/$UNIT" ] && [ -d "$SYSTEMD_DIR" ] && command -v systemctl >/dev/null 2>&1
}

boot_kind() {
  if [ -f "$UNIT_DIR/$UNIT" ]; then echo systemd
  elif command -v crontab >/dev/null 2>&1 && crontab -l 2>/dev/null | grep -q '# gpurent-guard$' && cron_runs; then echo crontab
  else echo none; fi
}

cron_word() { # PATH: one sh word for a crontab line (' quoted, % escaped: cron makes it a newline)
  printf "'%s'" "$(printf '%s' "$1" | sed "s/'/'\\\\''/g")" | sed 's/%/\\%/g'
}

case "${1:-}" in
  run) load; loop ;;
  provider) load; provider_call ;;
  start)
    load
    [ -f "$DIR/off" ] && { echo "off (switched off by the user; gpurent guard set turns it on)"; exit 0; }
    if unit_here; then
      # The unit runs the loop: one started from an SSH session (an older gpurent) is replaced.
      p=$(running_pid)
      if [ -n "$p" ] && systemctl is-active --quiet "$UNIT" 2>/dev/null; then echo "running pid=$p"; exit 0; fi
      [ -n "$p" ] && kill "$p" 2>/dev/null; rm -f "$DIR/pid"
      systemctl start "$UNIT" || { echo "did not start ($UNIT)"; exit 1; }
      i=0; while [ $i -lt 500 ] && ! running_pid > /dev/null; do nap 10; i=$((i + napped)); done
      p=$(running_pid) && { echo "started pid=$p unit=$UNIT"; exit 0; }
      echo "did not start ($UNIT)"; exit 1
    fi
    p=$(running_pid) && { echo "running pid=$p"; exit 0; }
    if command -v setsid >/dev/null 2>&1; then
      setsid sh "$DIR/guard.sh" run < /dev/null >> "$DIR/guard.out" 2>&1 &
    else
      nohup sh "$DIR/guard.sh" run < /dev/null >> "$DIR/guard.out" 2>&1 &
    fi
    i=0; while [ $i -lt 500 ] && ! running_pid > /dev/null; do nap 10; i=$((i + napped)); done
    p=$(running_pid) && { echo "started pid=$p"; exit 0; }
    echo "did not start"; exit 1 ;;
  stop)
    load
    unit_here && systemctl stop "$UNIT" >/dev/null 2>&1
    p=$(running_pid) && kill "$p"; rm -f "$DIR/pid"; echo stopped ;;
  boot)
    load
    if [ "$(id -u)" = 0 ] && [ -d "$SYSTEMD_DIR" ] && command -v systemctl >/dev/null 2>&1; then
      # The unit runs the loop itself (Type=simple): systemd owns it, `start` goes through it.
      # The path in systemd's quoting: \ and " escaped, % (specifiers) and $ (variables) doubled.
      uw=$(printf '%s' "$DIR" | sed 's/\\/\\\\/g; s/"/\\"/g; s/%/%%/g; s/\$/$$/g')
      printf '[Unit]\nDescription=gpurent guard\nAfter=network.target\n\n[Service]\nType=simple\nExecStart=/bin/sh "%s/guard.sh" run\n\n[Install]\nWantedBy=multi-user.target\n' "$uw" > "$UNIT_DIR/$UNIT"
      systemctl daemon-reload && systemctl enable "$UNIT" >/dev/null 2>&1 && { echo boot=systemd; exit 0; }
      rm -f "$UNIT_DIR/$UNIT"
    fi
    if command -v crontab >/dev/null 2>&1 && cron_runs; then
      { crontab -l 2>/dev/null | grep -v '# gpurent-guard$'; echo "@reboot /bin/sh $(cron_word "$DIR/guard.sh") start # gpurent-guard"; } | crontab - && { echo boot=crontab; exit 0; }
    fi
    echo boot=none ;;
  unboot)
    load
    if [ -f "$UNIT_DIR/$UNIT" ]; then
      systemctl disable "$UNIT" >/dev/null 2>&1; rm -f "$UNIT_DIR/$UNIT"
    fi
    if command -v crontab >/dev/null 2>&1 && crontab -l 2>/dev/null | grep -q '# gpurent-guard$'; then
      crontab -l 2>/dev/null | grep -v '# gpurent-guard$' | crontab -
    fi
    echo boot=none ;;
  state)
    load; p=$(running_pid)
    if [ -n "$p" ]; then echo "running=1 pid=$p boot=$(boot_kind)"; else echo "running=0 pid= boot=$(boot_kind)"; fi ;;
  *) echo "usage: guard.sh start|run|stop|boot|unboot|state|provider" >&2; exit 2 ;;
esac
