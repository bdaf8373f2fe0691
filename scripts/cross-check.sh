#!/usr/bin/env bash
# Type-check gpurent-core, gpurent-cli and gpurent-app (src-tauri) for Windows (x86_64-pc-windows-gnu)
# and macOS (aarch64-apple-darwin) on a Debian/Ubuntu x86_64 machine, so a Unix-only API (or a
# macOS/Windows-only one) fails CI on the change that adds it. Nothing is linked: `cargo check` only.
#
# Why not `rustup target add`: CI machines (and this one) may not reach static.rust-lang.org. What
# it uses instead, all from the ordinary package registries:
#   - Debian's rustc-web + rust-web-src (the std sources), unpacked (never installed: it conflicts
#     with rustup) into  ${XDG_CACHE_HOME:-$HOME/.cache}/gpurent-cross/rustc-web-<version>;
#     std for each target is built from those sources with -Zbuild-std (RUSTC_BOOTSTRAP=1).
#   - Windows: mingw-w64 compiles the bundled C (SQLite, libssh2) and gives windres to tauri-build.
#   - macOS: zig (PyPI `ziglang`, in a venv in the same cache folder) compiles the bundled C to
#     Mach-O arm64 without an Apple SDK. Objective-C sources (`*.m`, which need Cocoa's headers:
#     mac-notification-sys) are compiled as an empty unit: nothing links in a check, and their
#     crates' Rust is still type-checked.
#   - OpenSSL: a check needs only its headers; Debian's are linked into a fake prefix per target
#     and OPENSSL_NO_VENDOR=1 skips building the vendored OpenSSL (a release build does build it).
#
# Usage: scripts/cross-check.sh [windows|macos|wine-tests ...]   (default: windows macos;
#        wine-tests, not in CI, runs gpurent-core's unit tests for Windows under Wine)
# Env:   GPURENT_CROSS_TARGET_DIR  cargo target dir (default: target/cross; it is rebuildable)
#        GPURENT_CROSS_CACHE       toolchain cache (default: ${XDG_CACHE_HOME:-$HOME/.cache}/gpurent-cross)
# Exit status: non-zero when anything fails to type-check for any target.
# Measured on 2 cores shared with other builds (load 4-5): cold (empty cache and target dir, so
# the downloads, std for both targets and every dependency) 18 min 11 s; warm, both targets, 24 s.
set -euo pipefail
cd "$(dirname "$0")/.."
export DEBIAN_FRONTEND=noninteractive CARGO_TERM_COLOR=${CARGO_TERM_COLOR:-never}

targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(windows macos)

cache=${GPURENT_CROSS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gpurent-cross}
target_dir=${GPURENT_CROSS_TARGET_DIR:-$PWD/target/cross}
mkdir -p "$cache" "$target_dir"
SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi

# --- Debian packages (also in scripts/install-deps.sh; repeated here so the script stands alone)
pkgs=(gcc-mingw-w64-x86-64 binutils-mingw-w64-x86-64 libssl-dev python3-venv dpkg-dev)
if ! dpkg -s "${pkgs[@]}" >/dev/null 2>&1; then
  $SUDO apt-get update -q
  $SUDO apt-get install -y -q --no-install-recommends "${pkgs[@]}"
fi

# --- rustc + std sources from Debian (rustc-web), unpacked into the cache
r_version=$(apt-cache policy rustc-web | sed -n 's/^ *Candidate: *//p')
if [ -z "$r_version" ] || [ "$r_version" = "(none)" ]; then
  $SUDO apt-get update -q
  r_version=$(apt-cache policy rustc-web | sed -n 's/^ *Candidate: *//p')
fi
R="$cache/rustc-web-$r_version"
if [ ! -x "$R/usr/bin/rustc" ] || [ ! -d "$R/usr/lib/rustlib/src/rust/library" ]; then
  echo "unpacking rustc-web $r_version into $R"
  libstd=$(apt-cache depends libstd-rust-web-dev | grep -o 'libstd-rust-web-[0-9][0-9.]*' | head -n1)
  debs="$cache/debs-$r_version"
  rm -rf "$debs" "$R.tmp"
  mkdir -p "$debs" "$R.tmp"
  (cd "$debs" && apt-get download -q "rustc-web=$r_version" "libstd-rust-web-dev=$r_version" \
     "$libstd=$r_version" "rust-web-src=$r_version")
  # the LLVM that this rustc's librustc_driver links against
  llvm=$(for f in "$debs"/*.deb; do dpkg-deb -f "$f" Depends; done | tr ',' '\n' |
         grep -o 'libllvm[0-9]\+' | sort -u | head -n1)
  if [ -n "$llvm" ]; then (cd "$debs" && apt-get download -q "$llvm"); fi
  for f in "$debs"/*.deb; do dpkg-deb -x "$f" "$R.tmp"; done
  rm -rf "$R" "$debs"
  mv "$R.tmp" "$R"
fi
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || echo x86_64-linux-gnu)
export RUSTC="$R/usr/bin/rustc" RUSTDOC="$R/usr/bin/rustdoc" RUSTC_BOOTSTRAP=1
export LD_LIBRARY_PATH="$R/usr/lib/$multiarch:$R/usr/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
"$RUSTC" --version
# rustup's cargo finds std's sources through `rustc --print sysroot`: Debian's sysroot is $R/usr.
[ -d "$("$RUSTC" --print sysroot)/lib/rustlib/src/rust/library" ] || {
  echo "error: std sources missing under $("$RUSTC" --print sysroot)" >&2; exit 1; }

# --- OpenSSL headers only, in a prefix per target (no libraries: nothing links in a check)
ossl="$cache/openssl-headers"
if [ ! -e "$ossl/include/openssl/opensslv.h" ]; then
  rm -rf "$ossl"; mkdir -p "$ossl/include/openssl" "$ossl/lib"
  ln -s /usr/include/openssl/* "$ossl/include/openssl/"
  ln -sf /usr/include/"$multiarch"/openssl/* "$ossl/include/openssl/"
fi
export OPENSSL_STATIC=1 OPENSSL_NO_VENDOR=1

# --- zig as the C compiler for macOS, with wrappers that drop the Apple-only flags cc-rs passes
zig_env() {
  if [ ! -x "$cache/venv/bin/python" ] || ! "$cache/venv/bin/python" -m ziglang version >/dev/null 2>&1; then
    rm -rf "$cache/venv"
    python3 -m venv "$cache/venv"
    "$cache/venv/bin/pip" install -q 'ziglang==0.17.1'
  fi
  cat >"$cache/zig-cc" <<EOF
#!/bin/sh
# cc-rs asks for an Apple clang; zig cc knows its target from -target and needs no SDK.
py="$cache/venv/bin/python"
EOF
  printf 'empty="%s"\n' "$cache/empty-objc-unit.c" >>"$cache/zig-cc"
  : >"$cache/empty-objc-unit.c"
  cat >>"$cache/zig-cc" <<'EOF'
n=$#; i=0; skip=0
for a in "$@"; do
  i=$((i + 1))
  if [ $skip = 1 ]; then skip=0; else
    case "$a" in
      --target=*|-mmacosx-version-min=*|-mmacos-version-min=*) ;;
      -arch|-isysroot|-target) skip=1 ;;
      # Objective-C of a -sys crate (mac-notification-sys, under tauri-plugin-notification)
      # needs Cocoa's headers, which exist only in Apple's SDK. A check links nothing, so the
      # unit is compiled empty; the crate's Rust is still type-checked.
      *.m) echo "cross-check: no Apple SDK here: $a compiled as an empty unit" >&2
           set -- "$@" "$empty" ;;
      -fobjc-*|-ObjC) ;;
      *) set -- "$@" "$a" ;;
    esac
  fi
done
shift "$n"
exec "$py" -m ziglang cc -target aarch64-macos "$@"
EOF
  printf '#!/bin/sh\nexec "%s" -m ziglang ar "$@"\n' "$cache/venv/bin/python" >"$cache/zig-ar"
  chmod +x "$cache/zig-cc" "$cache/zig-ar"
}

# A canary crate that uses Linux- and Unix-only APIs. It must FAIL to check for each target, with
# the error naming the module that target lacks: proof that the check really compiles for that
# OS (a toolchain that quietly checked for the host would pass it). Same profile as the
# workspace so the std built for gpurent is reused.
canary="$target_dir/canary"
mkdir -p "$canary/src"
cat >"$canary/Cargo.toml" <<'EOF2'
[package]
name = "gpurent-cross-canary"
version = "0.0.0"
edition = "2021"
[workspace]
[profile.dev]
debug = "line-tables-only"
[profile.dev.package."*"]
opt-level = 1
debug = false
EOF2
cat >"$canary/src/lib.rs" <<'EOF2'
// Must not compile for Windows (no std::os::unix) nor for macOS (no std::os::linux).
pub fn mode(m: &std::fs::Metadata) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    m.permissions().mode()
}
pub fn inode(m: &std::fs::Metadata) -> u64 {
    use std::os::linux::fs::MetadataExt;
    m.st_ino()
}
EOF2
canary() { # $1 = target triple, $2 = the module it must report missing
  local out
  echo "--- canary for $1 (the first run builds std for it: minutes)"
  if out=$(CARGO_TARGET_DIR="$target_dir" cargo check -q -Zbuild-std=std,panic_abort \
             --manifest-path "$canary/Cargo.toml" --target "$1" 2>&1); then
    echo "error: the canary using std::os::$2 type-checked for $1: this check proves nothing" >&2
    status=1
  elif grep -q "cannot find \`$2\` in \`os\`" <<<"$out"; then
    echo "--- canary: std::os::$2 is refused for $1, as it must be"
  else
    printf '%s\n' "$out" >&2
    echo "error: the canary failed for $1, but not on std::os::$2 (toolchain broken?)" >&2
    status=1
  fi
}

status=0
check() { # $1 = target triple
  local t=$1 t_env
  t_env=$(echo "$t" | tr 'a-z-' 'A-Z_')
  printf '\n--- cargo check for %s\n' "$t"
  local t0; t0=$(date +%s)
  if env "${t_env}_OPENSSL_DIR=$ossl" CARGO_TARGET_DIR="$target_dir" \
     cargo check --locked -Zbuild-std=std,panic_abort --target "$t" \
       -p gpurent-core -p gpurent-cli -p gpurent-app; then
    printf -- '--- %s: ok (%d s)\n' "$t" $(( $(date +%s) - t0 ))
  else
    printf -- '--- %s: FAILED (%d s)\n' "$t" $(( $(date +%s) - t0 )) >&2
    status=1
  fi
}

# Optional, not in CI (cold: ~15 min more, OpenSSL is built from source for Windows; then ~40 s):
# link gpurent-core's unit tests for x86_64-pc-windows-gnu and run them under Debian's Wine 8.
# Wine 8 lacks bcryptprimitives.dll (Rust's std takes random bytes from its ProcessPrng), so a
# two-line stand-in over advapi32's RtlGenRandom is compiled with mingw into the Wine prefix.
wine_tests() {
  local t=x86_64-pc-windows-gnu prefix="$cache/wineprefix"
  if ! dpkg -s wine64 >/dev/null 2>&1; then
    $SUDO apt-get install -y -q --no-install-recommends wine64
  fi
  mkdir -p "$cache/wine-stub"
  if [ ! -e "$prefix/drive_c/windows/system32/bcryptprimitives.dll" ]; then
    cat >"$cache/wine-stub/bcryptprimitives.c" <<'EOF2'
#include <windows.h>
BOOLEAN WINAPI SystemFunction036(PVOID buf, ULONG len); /* RtlGenRandom */
__declspec(dllexport) BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T len) {
  while (len > 0) {
    ULONG n = len > 0x7fffffff ? 0x7fffffff : (ULONG)len;
    if (!SystemFunction036(data, n)) return FALSE;
    data += n; len -= n;
  }
  return TRUE;
}
EOF2
    x86_64-w64-mingw32-gcc -shared -O2 -o "$cache/wine-stub/bcryptprimitives.dll" \
      "$cache/wine-stub/bcryptprimitives.c" -ladvapi32
    WINEPREFIX="$prefix" WINEDEBUG=-all /usr/lib/wine/wine64 cmd /c exit >/dev/null 2>&1 || true
    cp "$cache/wine-stub/bcryptprimitives.dll" "$prefix/drive_c/windows/system32/"
  fi
  printf '\n--- gpurent-core unit tests for %s under Wine\n' "$t"
  # Linking needs real OpenSSL libraries: the vendored build (no header-only prefix here).
  if env -u OPENSSL_NO_VENDOR -u OPENSSL_STATIC CARGO_TARGET_DIR="$target_dir" \
       WINEPREFIX="$prefix" WINEDEBUG=-all \
       CARGO_TARGET_X86_64_PC_WINDOWS_GNU_RUNNER=/usr/lib/wine/wine64 \
       cargo test --locked -Zbuild-std=std,panic_abort --target "$t" -p gpurent-core --lib; then
    echo "--- wine tests: ok"
  else
    echo "--- wine tests: FAILED" >&2
    status=1
  fi
}

for t in "${targets[@]}"; do
  case "$t" in
    windows) canary x86_64-pc-windows-gnu unix; check x86_64-pc-windows-gnu ;;
    macos)
      zig_env
      export CC_aarch64_apple_darwin="$cache/zig-cc" AR_aarch64_apple_darwin="$cache/zig-ar"
      export MACOSX_DEPLOYMENT_TARGET=11.0
      canary aarch64-apple-darwin linux; check aarch64-apple-darwin ;;
    wine-tests) wine_tests ;;
    *) echo "usage: $0 [windows|macos|wine-tests ...]" >&2; exit 2 ;;
  esac
done
exit $status
