#!/bin/sh
# gpurent host probe, version 1. One POSIX sh script, one round trip: it prints everything the setup
# wizard needs as delimited sections, parsed by crates/gpurent-core/src/setup/parse.rs.
#
#   @@gpurent@@ begin NAME
#   ...the section's stdout...
#   @@gpurent@@ stderr NAME
#   ...its stderr...
#   @@gpurent@@ end NAME rc=N
#
# Each section runs in its own subshell (with `timeout` where the host has it), so one failing or
# hanging tool never hides the rest. Nothing is installed or changed; secrets are never printed
# (provider variables are listed by name, values only for instance ids).
# GPURENT_PROBE_ROOT (tests only) prefixes the files read below (/etc/os-release, /.dockerenv, ...).

R="${GPURENT_PROBE_ROOT:-}"
T="$(mktemp -d 2>/dev/null)" || T="/tmp/gpurent-probe.$$"
mkdir -p "$T" 2>/dev/null
trap 'rm -rf "$T"' EXIT INT TERM
if command -v timeout >/dev/null 2>&1; then HAVE_TIMEOUT=1; else HAVE_TIMEOUT=0; fi

# t SECONDS CMD...: run CMD with a time limit when the host has `timeout`.
t() {
  s=$1; shift
  if [ "$HAVE_TIMEOUT" = 1 ]; then timeout "$s" "$@"; else "$@"; fi
}

# section NAME FUNCTION: run FUNCTION in a subshell and print it as one section.
section() {
  ( "$2" ) >"$T/out" 2>"$T/err" </dev/null
  rc=$?
  echo "@@gpurent@@ begin $1"
  cat "$T/out"
  [ -s "$T/out" ] && [ -n "$(tail -c 1 "$T/out")" ] && echo
  echo "@@gpurent@@ stderr $1"
  cat "$T/err"
  [ -s "$T/err" ] && [ -n "$(tail -c 1 "$T/err")" ] && echo
  echo "@@gpurent@@ end $1 rc=$rc"
}

# The interpreter the wizard works with: gpurent's own venv once created, else the active one.
PY=""
for p in "$HOME/gpurent-venv/bin/python" python3 python; do
  if [ -x "$p" ] || command -v "$p" >/dev/null 2>&1; then PY="$p"; break; fi
done

s_meta() {
  echo "probe_version=1"
  echo "date=$(date -u +%Y-%m-%dT%H:%M:%SZ 2>/dev/null)"
  echo "user=$(id -un 2>/dev/null)"
  echo "uid=$(id -u 2>/dev/null)"
  echo "home=$HOME"
  echo "python=$PY"
}

s_os() { cat "$R/etc/os-release"; }

s_kernel() { uname -srm; }

s_cpu() {
  n=$(nproc 2>/dev/null || getconf _NPROCESSORS_ONLN 2>/dev/null || grep -c '^processor' /proc/cpuinfo)
  echo "cpus=$n"
  grep -m1 '^model name' /proc/cpuinfo 2>/dev/null
}

s_memory() { grep -E '^(MemTotal|MemAvailable):' /proc/meminfo; }

s_disk() {
  for d in "$HOME" /workspace /root/autodl-tmp /data /mnt /tmp /dev/shm; do
    [ -d "$d" ] || continue
    df -Pk "$d" 2>/dev/null | awk -v d="$d" 'NR > 1 { print d "\t" $2 "\t" $4 "\t" $6 }'
  done
}

s_container() {
  [ -f "$R/.dockerenv" ] && echo "marker=dockerenv"
  [ -f "$R/run/.containerenv" ] && echo "marker=containerenv"
  [ -d "$R/root/autodl-tmp" ] && echo "marker=autodl-tmp"
  [ -d "$R/root/autodl-pub" ] && echo "marker=autodl-pub"
  if [ -r "$R/proc/1/cgroup" ]; then
    grep -E 'docker|kubepods|containerd|lxc|libpod' "$R/proc/1/cgroup" | head -n 3 | sed 's/^/cgroup=/'
  fi
  [ -n "${RUNPOD_POD_ID:-}" ] && echo "env=RUNPOD_POD_ID=$RUNPOD_POD_ID"
  [ -n "${VAST_CONTAINERLABEL:-}" ] && echo "env=VAST_CONTAINERLABEL=$VAST_CONTAINERLABEL"
  env | cut -d= -f1 | grep -iE '^(RUNPOD_|VAST_|AUTODL|AutoDL|NVIDIA_VISIBLE_DEVICES|NVIDIA_DRIVER_CAPABILITIES|CUDA_VISIBLE_DEVICES|KUBERNETES_SERVICE_HOST)' | sort | sed 's/^/env_name=/'
  command -v systemd-detect-virt >/dev/null 2>&1 && echo "virt=$(systemd-detect-virt 2>/dev/null)"
  for f in sys_vendor product_name; do
    [ -r "$R/sys/class/dmi/id/$f" ] && echo "dmi_$f=$(cat "$R/sys/class/dmi/id/$f")"
  done
  true
}

s_nvidia_smi() { t 20 nvidia-smi; }

Q="index,name,uuid,pci.bus_id,driver_version,compute_cap,memory.total,memory.used,memory.free,utilization.gpu,temperature.gpu,power.draw,power.limit"
s_nvidia_smi_query() {
  out=$(t 20 nvidia-smi --query-gpu="$Q" --format=csv 2>&1)
  rc=$?
  printf '%s\n' "$out"
  # R470 and older have no compute_cap field: ask again without it.
  if [ $rc -ne 0 ] && printf '%s' "$out" | grep -q 'not a valid field'; then
    t 20 nvidia-smi --query-gpu="$(echo "$Q" | sed 's/compute_cap,//')" --format=csv
    rc=$?
  fi
  return $rc
}

s_nvidia_smi_apps() { t 20 nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv; }

s_nvidia_proc() { cat "$R/proc/driver/nvidia/version"; }

s_nvcc() {
  if command -v nvcc >/dev/null 2>&1; then
    echo "path=$(command -v nvcc)"
    echo "on_path=yes"
    t 20 nvcc -V
  else
    for n in "$R"/usr/local/cuda/bin/nvcc "$R"/usr/local/cuda-*/bin/nvcc; do
      if [ -x "$n" ]; then
        echo "path=$n"
        echo "on_path=no"
        t 20 "$n" -V
        return $?
      fi
    done
    echo "nvcc: not found" >&2
    return 127
  fi
}

s_python() {
  [ -n "$PY" ] || { echo "python3: not found" >&2; return 127; }
  for p in python3 python python3.8 python3.9 python3.10 python3.11 python3.12 python3.13 python3.14 python3.15; do
    command -v "$p" >/dev/null 2>&1 && echo "interpreter=$(command -v "$p")"
  done
  [ -x "$HOME/gpurent-venv/bin/python" ] && echo "gpurent_venv=$HOME/gpurent-venv"
  [ -n "${VIRTUAL_ENV:-}" ] && echo "virtual_env=$VIRTUAL_ENV"
  [ -n "${CONDA_PREFIX:-}" ] && echo "conda_prefix=$CONDA_PREFIX"
  [ -n "${CONDA_DEFAULT_ENV:-}" ] && echo "conda_default_env=$CONDA_DEFAULT_ENV"
  if command -v conda >/dev/null 2>&1; then
    echo "conda=$(command -v conda)"
    t 30 conda env list 2>/dev/null | grep -v '^#' | grep . | sed 's/^/conda_env=/'
  fi
  t 30 "$PY" -c 'import sys, sysconfig, os
print("executable=" + sys.executable)
print("version=" + sys.version.split()[0])
print("in_venv=" + str(sys.prefix != getattr(sys, "base_prefix", sys.prefix)))
print("stdlib=" + (sysconfig.get_path("stdlib") or ""))
try:
    import venv, ensurepip
    print("venv_module=True")
except Exception:
    print("venv_module=False")' >"$T/py" 2>&1
  rc=$?
  cat "$T/py"
  # PEP 668 marker (EXTERNALLY-MANAGED beside the stdlib): pip refuses system installs.
  std=$(sed -n 's/^stdlib=//p' "$T/py")
  if [ -n "$std" ] && [ -f "$R$std/EXTERNALLY-MANAGED" ]; then echo "externally_managed=True"; else echo "externally_managed=False"; fi
  return $rc
}

s_pip() {
  [ -n "$PY" ] || return 127
  t 30 "$PY" -m pip --version
  t 30 "$PY" -m pip config list 2>/dev/null | sed 's/^/config=/'
  for v in PIP_INDEX_URL PIP_EXTRA_INDEX_URL PIP_FIND_LINKS; do
    eval "val=\${$v:-}"
    [ -n "$val" ] && echo "env=$v=$val"
  done
  true
}

# Known PyTorch wheel sources (data/pytorch-mirrors.csv lists the same URLs).
URLS="https://download.pytorch.org/whl/ https://pypi.org/simple/ https://mirrors.aliyun.com/pytorch-wheels/ https://mirrors.nju.edu.cn/pytorch/whl/ https://pypi.tuna.tsinghua.edu.cn/simple/ https://mirrors.aliyun.com/pypi/simple/"
s_net() {
  for u in $URLS; do
    if command -v curl >/dev/null 2>&1; then
      code=$(t 10 curl -sS -o /dev/null -I -L --connect-timeout 4 -m 6 -w '%{http_code}' "$u" 2>"$T/curl_err")
      echo "reach $u rc=$? http=$code $(head -c 200 "$T/curl_err" | tr '\n' ' ')"
    elif command -v wget >/dev/null 2>&1; then
      t 10 wget -q --spider -T 5 -t 1 "$u" 2>/dev/null
      echo "reach $u rc=$? http=?"
    else
      echo "reach $u rc=127 http=? no curl or wget"
    fi
  done
}

s_torch() {
  [ -n "$PY" ] || { echo "python3: not found" >&2; return 127; }
  t 120 "$PY" - <<'PYEOF'
import sys, warnings
def out(k, v):
    print("%s=%s" % (k, str(v).replace("\n", " ")))
try:
    from importlib import metadata
    for d in ("torch", "torchvision", "torchaudio"):
        try:
            out("dist_" + d, metadata.version(d))
        except Exception:
            pass
except Exception:
    pass
try:
    import torch
except Exception as e:
    out("import_error", "%s: %s" % (type(e).__name__, e))
    sys.exit(3)
out("torch_version", getattr(torch, "__version__", "?"))
out("torch_cuda", getattr(torch.version, "cuda", None))
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    try:
        out("cuda_available", torch.cuda.is_available())
    except Exception as e:
        out("cuda_error", "%s: %s" % (type(e).__name__, e))
    try:
        n = torch.cuda.device_count()
        out("device_count", n)
        for i in range(n):
            cc = torch.cuda.get_device_capability(i)
            mem = torch.cuda.get_device_properties(i).total_memory
            out("device", "%d|%s|%d.%d|%d" % (i, torch.cuda.get_device_name(i), cc[0], cc[1], mem))
    except Exception as e:
        out("device_error", "%s: %s" % (type(e).__name__, e))
    try:
        out("arch_list", " ".join(torch.cuda.get_arch_list()))
    except Exception as e:
        out("arch_error", "%s: %s" % (type(e).__name__, e))
    try:
        out("cudnn", torch.backends.cudnn.version())
    except Exception as e:
        out("cudnn_error", "%s: %s" % (type(e).__name__, e))
for w in caught:
    out("warning", w.message)
PYEOF
}

echo "@@gpurent@@ probe v1"
section meta s_meta
section os s_os
section kernel s_kernel
section cpu s_cpu
section memory s_memory
section disk s_disk
section container s_container
section nvidia_smi s_nvidia_smi
section nvidia_smi_query s_nvidia_smi_query
section nvidia_smi_apps s_nvidia_smi_apps
section nvidia_proc s_nvidia_proc
section nvcc s_nvcc
section python s_python
section pip s_pip
section net s_net
section torch s_torch
echo "@@gpurent@@ done"
