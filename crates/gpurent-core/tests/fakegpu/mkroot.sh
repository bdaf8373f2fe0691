#!/bin/sh
# mkroot.sh SCENARIO.env ROOT: lay out the files the probe reads under GPURENT_PROBE_ROOT for a
# scenario: /etc/os-release, /.dockerenv + /proc/1/cgroup (containers), /proc/driver/nvidia/version
# (a loaded kernel module), /usr/local/cuda/bin/nvcc (a toolkit off PATH), /root/autodl-tmp, and the
# PEP 668 EXTERNALLY-MANAGED marker beside the real interpreter's stdlib.
set -e
. "$1"
R=$2
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$R/etc" "$R/proc/1"
case "${FAKE_OS:-ubuntu-22.04}" in
  ubuntu-*) v=${FAKE_OS#ubuntu-}; printf 'PRETTY_NAME="Ubuntu %s LTS"\nNAME="Ubuntu"\nVERSION_ID="%s"\nID=ubuntu\nID_LIKE=debian\n' "$v" "$v" ;;
  debian-*) v=${FAKE_OS#debian-}; printf 'PRETTY_NAME="Debian GNU/Linux %s"\nNAME="Debian GNU/Linux"\nVERSION_ID="%s"\nID=debian\n' "$v" "$v" ;;
  rocky-*) v=${FAKE_OS#rocky-}; printf 'PRETTY_NAME="Rocky Linux %s"\nNAME="Rocky Linux"\nVERSION_ID="%s"\nID="rocky"\nID_LIKE="rhel centos fedora"\n' "$v" "$v" ;;
esac > "$R/etc/os-release"
if [ -n "${FAKE_CONTAINER:-}" ]; then
  touch "$R/.dockerenv"
  echo "0::/kubepods/besteffort/pod1234/abcdef" > "$R/proc/1/cgroup"
else
  echo "0::/init.scope" > "$R/proc/1/cgroup"
fi
case "${FAKE_SMI:-ok}" in
  no_driver) ;;
  *) case " ${FAKE_ABSENT:-} " in
       *" nvidia-smi "*) ;;
       *) mkdir -p "$R/proc/driver/nvidia"
          echo "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  ${FAKE_KMOD:-${FAKE_DRIVER:-550.54.15}}  Release Build  (dvs-builder@U16-I3-B03-4-3)  Tue Mar  5 2024" > "$R/proc/driver/nvidia/version" ;;
     esac ;;
esac
if [ "${FAKE_NVCC_AT:-}" = usr_local ]; then
  mkdir -p "$R/usr/local/cuda/bin"
  cp "$here/bin/nvcc" "$R/usr/local/cuda/bin/nvcc"
fi
[ -n "${FAKE_AUTODL:-}" ] && mkdir -p "$R/root/autodl-tmp"
if [ -n "${FAKE_EXTERNALLY_MANAGED:-}" ]; then
  std=$("${FAKE_REAL_PYTHON:-/usr/bin/python3}" -c 'import sysconfig; print(sysconfig.get_path("stdlib"))')
  mkdir -p "$R$std"
  printf '[externally-managed]\nError=To install Python packages system-wide, try apt install python3-xyz\n' > "$R$std/EXTERNALLY-MANAGED"
fi
