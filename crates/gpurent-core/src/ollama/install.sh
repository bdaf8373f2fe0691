# Install Ollama where it is missing, the documented manual way (no remote install script piped
# into a shell): download the release archive for this CPU and extract it under a prefix, so that
# PREFIX/bin/ollama and PREFIX/lib/ollama land side by side (ollama/ollama docs/linux.md, "Manual
# install": `curl -L https://ollama.com/download/ollama-linux-amd64.tgz -o ollama-linux-amd64.tgz`,
# `sudo tar -C /usr -xzf ollama-linux-amd64.tgz`; arm64: ollama-linux-arm64.tgz; newer releases of
# the page (docs/linux.mdx) ship ollama-linux-amd64.tar.zst, extracted with `tar x -C /usr`).
# Run by gpurent as a supervised job (src/ollama/install.rs), POSIX sh. $1: the download base URL.
# Every line for gpurent starts with "@@ollama@@ "; everything else is tool output.
M='@@ollama@@'
base=${1%/}
say() { echo "$M $*"; }
fail() { say "error $1 $2"; exit 1; }

for p in "$(command -v ollama 2>/dev/null)" /usr/local/bin/ollama /usr/bin/ollama "$HOME/.local/bin/ollama"; do
  if [ -n "$p" ] && [ -x "$p" ]; then say "present $p"; exit 0; fi
done

m=$(uname -m)
case "$m" in
  x86_64|amd64) arch=amd64 ;;
  aarch64|arm64) arch=arm64 ;;
  *) fail unsupported_arch "$m" ;;
esac
say "arch $m $arch"

if command -v curl >/dev/null 2>&1; then dl=curl
elif command -v wget >/dev/null 2>&1; then dl=wget
else fail no_downloader "neither curl nor wget is installed"
fi

# /usr/local as root (when it can be written), else the login user's ~/.local.
if [ "$(id -u 2>/dev/null)" = 0 ] && [ -w /usr/local ]; then prefix=/usr/local; else prefix=$HOME/.local; fi
mkdir -p "$prefix" || fail install_failed "cannot create $prefix"
say "prefix $prefix"
rm -rf "$prefix"/.gpurent-ollama.* 2>/dev/null
tmp=$(mktemp -d "$prefix/.gpurent-ollama.XXXXXX") || fail install_failed "cannot write in $prefix"
trap 'rm -rf "$tmp"' EXIT
# A cancel closes the channel (SIGPIPE on the next line written) and TERMs the group.
trap 'exit 130' TERM INT HUP PIPE

# HEAD the URL: prints Content-Length (empty when not sent); fails when the URL does not answer 2xx.
size() {
  case $dl in
    curl) h=$(curl -fsSLI "$1" 2>"$tmp/err") || return 1 ;;
    wget) h=$(wget --spider -S "$1" 2>&1) || { echo "$h" >"$tmp/err"; return 1; } ;;
  esac
  echo "$h" | tr -d '\r' | awk 'tolower($1)=="content-length:"{n=$2} END{print n}'
}

if command -v zstd >/dev/null 2>&1; then exts="tar.zst tgz"; else exts="tgz"; fi
url=""; total=""
for ext in $exts; do
  u="$base/ollama-linux-$arch.$ext"
  if t=$(size "$u"); then url=$u; total=$t; break; fi
done
if [ -z "$url" ]; then
  hint=""; case $exts in tgz) hint=" (no zstd on this host: newer releases may ship only .tar.zst)" ;; esac
  fail download_failed "$base/ollama-linux-$arch.$ext: $(tail -n 3 "$tmp/err" 2>/dev/null | tr '\n' ' ')$hint"
fi
say "url $url"
[ -n "$total" ] && say "total $total"

# Free space: the archive plus what it unpacks to (about twice the archive: an estimate).
avail_kb=$(df -Pk "$prefix" 2>/dev/null | awk 'NR==2{print $4}')
if [ -n "$total" ] && [ -n "$avail_kb" ]; then
  need_kb=$((total * 3 / 1024 + 1))
  if [ "$avail_kb" -lt "$need_kb" ]; then fail no_space "$need_kb $avail_kb $prefix"; fi
fi

f="$tmp/ollama.$ext"
case $dl in
  curl) curl -fsSL -o "$f" "$url" 2>"$tmp/err" & ;;
  wget) wget -q -O "$f" "$url" 2>"$tmp/err" & ;;
esac
pid=$!
while kill -0 "$pid" 2>/dev/null; do
  say "bytes $(wc -c <"$f" 2>/dev/null || echo 0)"
  sleep 1
done
wait "$pid"; rc=$?
if [ "$rc" != 0 ]; then
  if grep -qi 'no space left' "$tmp/err" 2>/dev/null; then fail no_space "- ${avail_kb:--} $prefix"; fi
  fail download_failed "$url: $dl exit $rc $(tail -n 3 "$tmp/err" 2>/dev/null | tr '\n' ' ')"
fi
say "bytes $(wc -c <"$f")"

say "extract $prefix"
case $ext in
  tgz) tar -xzf "$f" -C "$prefix" 2>"$tmp/err"; rc=$? ;;
  tar.zst) zstd -dc "$f" 2>"$tmp/err" | tar -x -C "$prefix" 2>>"$tmp/err"; rc=$? ;;
esac
if [ "$rc" != 0 ]; then
  if grep -qi 'no space left' "$tmp/err" 2>/dev/null; then fail no_space "- - $prefix"; fi
  fail install_failed "tar: $(tail -n 3 "$tmp/err" | tr '\n' ' ')"
fi
[ -x "$prefix/bin/ollama" ] || fail install_failed "the archive has no bin/ollama"
say "installed $prefix/bin/ollama"
