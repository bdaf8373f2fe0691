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

# A download that starts on https stays on https: a redirect to plain http is refused (curl:
# --proto-redir; both tools: the HEAD's Location headers are checked before anything is fetched).
case $base in https://*) secure=1; redir="--proto-redir =https" ;; *) secure=""; redir="" ;; esac

# HEAD the URL: its headers (every hop's) in $tmp/head; fails when it does not answer 2xx.
head_of() {
  case $dl in
    curl) curl -fsSLI $redir "$1" >"$tmp/head" 2>"$tmp/err" ;;
    wget) wget --spider -S "$1" >"$tmp/head" 2>&1 || { cp "$tmp/head" "$tmp/err"; return 1; } ;;
  esac
}
# Location headers of the last HEAD, one per line, in order.
locations() { tr -d '\r' <"$tmp/head" | awk 'tolower($1)=="location:"{print $2}'; }
# HEAD the URL: prints Content-Length (empty when not sent); status 1 when the URL does not answer
# 2xx, 2 when an https URL redirects to http.
size() {
  head_of "$1"; rc=$?
  if [ -n "$secure" ] && locations | grep -qi '^http:'; then return 2; fi
  [ "$rc" = 0 ] || return 1
  tr -d '\r' <"$tmp/head" | awk 'tolower($1)=="content-length:"{n=$2} END{print n}'
}
fetch() { # URL FILE
  case $dl in
    curl) curl -fsSL $redir -o "$2" "$1" ;;
    wget) wget -q -O "$2" "$1" ;;
  esac
}

if command -v zstd >/dev/null 2>&1; then exts="tar.zst tgz"; else exts="tgz"; fi
url=""; total=""
for ext in $exts; do
  u="$base/ollama-linux-$arch.$ext"
  t=$(size "$u"); rc=$?
  [ "$rc" = 2 ] && fail insecure_redirect "$u -> $(locations | grep -i '^http:' | head -n 1)"
  if [ "$rc" = 0 ]; then url=$u; total=$t; break; fi
done
if [ -z "$url" ]; then
  hint=""; case $exts in tgz) hint=" (no zstd on this host: newer releases may ship only .tar.zst)" ;; esac
  fail download_failed "$base/ollama-linux-$arch.$ext: $(tail -n 3 "$tmp/err" 2>/dev/null | tr '\n' ' ')$hint"
fi
say "url $url"
[ -n "$total" ] && say "total $total"

# The release's checksums: Ollama publishes sha256sum.txt beside the archives of each GitHub
# release (`HASH  ./ollama-linux-amd64.tgz`; ollama/ollama#1313, PR #3028). It is read from the
# folder of the last hop that still names the archive (ollama.com/download redirects to
# github.com/ollama/ollama/releases/download/vX.Y.Z/…, then to a signed storage URL), so the sums
# are those of the same release. No sums, no tool to check them, or a mismatch: nothing installed.
name="ollama-linux-$arch.$ext"
dir=${url%/*}
for l in $(locations); do case $l in */"$name") dir=${l%/*} ;; esac; done
sums_url="$dir/sha256sum.txt"
fetch "$sums_url" "$tmp/sums" 2>"$tmp/err" || fail checksum_unavailable "$sums_url: $(tail -n 2 "$tmp/err" 2>/dev/null | tr '\n' ' ')"
want=$(tr -d '\r' <"$tmp/sums" | awk -v n="$name" '{f=$2; sub(/^\*/, "", f); sub(/^\.\//, "", f); if (f == n) {print tolower($1); exit}}')
[ -n "$want" ] || fail checksum_unavailable "$sums_url lists no $name"
if command -v sha256sum >/dev/null 2>&1; then sum() { sha256sum "$1" | awk '{print $1}'; }
elif command -v shasum >/dev/null 2>&1; then sum() { shasum -a 256 "$1" | awk '{print $1}'; }
elif command -v openssl >/dev/null 2>&1; then sum() { openssl dgst -sha256 -r "$1" | awk '{print $1}'; }
else fail checksum_unavailable "no sha256sum, shasum or openssl on the host to check $name"
fi
say "sha256 $want"

# Free space: the archive plus what it unpacks to (about twice the archive: an estimate).
avail_kb=$(df -Pk "$prefix" 2>/dev/null | awk 'NR==2{print $4}')
if [ -n "$total" ] && [ -n "$avail_kb" ]; then
  need_kb=$((total * 3 / 1024 + 1))
  if [ "$avail_kb" -lt "$need_kb" ]; then fail no_space "$need_kb $avail_kb $prefix"; fi
fi

f="$tmp/ollama.$ext"
fetch "$url" "$f" 2>"$tmp/err" &
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
got=$(sum "$f")
[ "$got" = "$want" ] || fail checksum_mismatch "$name $want $got"

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
