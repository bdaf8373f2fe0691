#!/usr/bin/env bash
# live-check.sh — check gpurent against a REAL provider account (yours), the one thing the
# project's own tests cannot do: they run against the providers' published OpenAPI specs
# (Prism) and a stateful fake cloud only. NO LIVE ACCOUNT EXISTS IN THIS PROJECT: this script
# was written against the specs and checked only against Prism's mock of them (read-only part);
# its rent part has never run against a real provider. Never run in CI. See docs/providers.md.
#
# Usage:
#   GPURENT_RUNPOD_API_KEY=… scripts/live-check.sh runpod            # read-only: free
#   GPURENT_VAST_API_KEY=…   scripts/live-check.sh vast --rent       # rents the cheapest 1-GPU offer
#   GPURENT_LAMBDA_API_KEY=… scripts/live-check.sh lambda --rent --max-price 1.50
#   GPURENT_AUTODL_API_KEY=… scripts/live-check.sh autodl --rent --max-price 3.00   # yuan/h
#
# Read-only part (costs nothing): with the key from GPURENT_<P>_API_KEY (an account of its own
# in gpurent, never stored), in a throw-away GPURENT_HOME, through the CLI with --json:
#   1. `provider test` — one authenticated read;
#   2. `instances` — what the account has now (all "not started by gpurent"), which of it bills;
#   3. `offers --count 1` — the live offers, each checked against what the pinned spec says
#      (offer id shape, price > 0, GPU count, host CUDA where the provider reports one).
# Rent part (--rent; costs money: about the offer's hourly price for a few minutes): the cheapest
# 1-GPU offer (at most --max-price per hour in the provider's currency: USD, AutoDL yuan; default
# 2.00 — AutoDL lists no price before the create: its offer shows the documented rate, and the
# machine's own rate is read after it, compared below) is shown and rented only after you type
# the confirmation it asks for; a throw-away SSH key (ssh-keygen; in the OS keychain only for the
# guard's login, as live-check-<pid>, deleted on exit) proves the key login (`rent` waits for it);
# on RunPod and Vast a guard on the machine releases it 15 min
# after the rent whatever happens here (guard set --deadline 15m --action release, with the
# machine's OWN key — never your account key; Lambda and AutoDL put no key on their machines: no
# guard there, only this script's trap);
# stop/start where the provider can (--stop-start); then release, and the provider is read again
# (every 15 s) until it lists nothing of this machine billing. A trap releases the machine on any
# exit or Ctrl-C after the create; if the script itself dies, release by hand (on RunPod/Vast the
# guard does it within 15 min): `GPURENT_HOME=<printed> gpurent release ID --yes`.
#
# Every provider answer that did not match the pinned spec is printed as "MISMATCH: …". Exit
# status: 0 everything matched, 1 at least one mismatch (or the key was refused), 2 bad usage.

set -uo pipefail

usage() {
  sed -n '2,32p' "$0" | sed 's/^# \{0,1\}//'
  exit 2
}

provider="${1:-}"
[ -n "$provider" ] || usage
shift
rent=0
stop_start=0
max_price="2.00"
while [ $# -gt 0 ]; do
  case "$1" in
    --rent) rent=1 ;;
    --stop-start) stop_start=1 ;;
    --max-price) max_price="${2:?--max-price needs a value}"; shift ;;
    -h|--help) usage ;;
    *) echo "unknown option: $1" >&2; usage ;;
  esac
  shift
done

case "$provider" in
  runpod) stem=RUNPOD ;;
  vast) stem=VAST ;;
  lambda) stem=LAMBDA ;;
  autodl) stem=AUTODL ;;
  *) echo "provider must be runpod, vast, lambda or autodl" >&2; exit 2 ;;
esac
keyvar="GPURENT_${stem}_API_KEY"
if [ -z "${!keyvar:-}" ]; then
  echo "set $keyvar to your own API key (it is read from the environment, never stored)" >&2
  exit 2
fi
command -v python3 >/dev/null || { echo "python3 is needed to read the JSON" >&2; exit 2; }

here="$(cd "$(dirname "$0")/.." && pwd)"
if [ -n "${GPURENT_BIN:-}" ]; then
  bin="$GPURENT_BIN"
elif [ -x "$here/target/release/gpurent" ]; then
  bin="$here/target/release/gpurent"
elif [ -x "$here/target/debug/gpurent" ]; then
  bin="$here/target/debug/gpurent"
else
  bin="$(command -v gpurent || true)"
fi
[ -n "$bin" ] || { echo "no gpurent binary: cargo build -p gpurent-cli, or set GPURENT_BIN" >&2; exit 2; }

GPURENT_HOME="$(mktemp -d "${TMPDIR:-/tmp}/gpurent-live-check.XXXXXX")"
export GPURENT_HOME
echo "gpurent: $bin"
echo "GPURENT_HOME (throw-away, kept for inspection): $GPURENT_HOME"

mismatches=0
finish() {
  [ "$mismatches" -eq 0 ] && exit 0
  exit 1
}
mismatch() {
  echo "MISMATCH: $*"
  mismatches=$((mismatches + 1))
}

# gp ARGS… — run gpurent with --json; the JSON lands in $out, the exit status in $rc.
gp() {
  out="$("$bin" "$@" --json 2>"$GPURENT_HOME/stderr")"
  rc=$?
  echo "\$ gpurent $* --json  → exit $rc" >>"$GPURENT_HOME/transcript"
  printf '%s\n' "$out" >>"$GPURENT_HOME/transcript"
}

# py EXPR — evaluate a Python expression over the last JSON (`d`) and print it.
py() {
  printf '%s' "$out" | python3 -c "import json,sys
d=json.load(sys.stdin)
r=$1
print(r if not isinstance(r,(dict,list)) else json.dumps(r))"
}

echo
echo "== 1. provider test"
gp provider test "$provider"
if [ $rc -ne 0 ]; then
  echo "the key was not accepted: $out"
  exit 1
fi
echo "ok: $(py "d['account'].get('account_label') or d['account']['name']")"

echo
echo "== 2. instances (what the account has now)"
gp instances
before="[]"
if [ $rc -ne 0 ]; then
  mismatch "instances failed: $out"
else
  echo "listed: $(py "len(d['foreign'])"); billing now: $(py "sum(1 for f in d['foreign'] if f['billing'])")"
  before="$(py "sorted(f['instance']['id'] for f in d['foreign'])")"
  py "'\n'.join('  %s %s %s %s/h billing=%s' % (f['instance']['id'], f['instance']['raw_status'], f['instance'].get('gpu'), f['instance'].get('price_per_hour_usd'), f['billing']) for f in d['foreign'])"
  [ "$(py "len(d['reconcile']['failed_accounts'])")" = "0" ] || mismatch "the instance list could not be read: $(py "d['reconcile']['failed_accounts']")"
fi

echo
echo "== 3. offers (1 GPU)"
gp offers --provider "$provider" --count 1
if [ $rc -ne 0 ]; then
  mismatch "offers failed: $out"
  offers_n=0
else
  offers_n="$(py "len(d['offers'])")"
  echo "offers: $offers_n (cheapest five below)"
  py "'\n'.join('  %-48s %-28s %.4f %s/h cuda=%s tier=%s' % (o['offer_id'], o['gpu'], o['price_per_hour_usd'], o.get('currency', 'USD'), o.get('host_cuda'), o.get('tier')) for o in d['offers'][:5])"
  [ "$(py "len(d['failed_accounts'])")" = "0" ] || mismatch "offers: failed accounts $(py "d['failed_accounts']")"
  # The pinned spec's shapes (tests/provider-specs/): offer ids, prices, counts, host CUDA.
  bad="$(printf '%s' "$out" | PROVIDER="$provider" python3 -c '
import json, os, re, sys
d = json.load(sys.stdin)
p = os.environ["PROVIDER"]
shape = {"runpod": r"^(secure|community):1:.+$", "vast": r"^\d+$", "lambda": r"^[a-z0-9_]+@[a-z0-9-]+$", "autodl": r"^[A-Za-z0-9._-]+:1$"}[p]
cur = {"autodl": "CNY"}.get(p, "USD")
for o in d["offers"]:
    why = []
    if not re.match(shape, o["offer_id"]): why.append("offer id shape")
    if not o["price_per_hour_usd"] > 0: why.append("price not > 0")
    if o["gpu_count"] != 1: why.append("gpu_count %s for --count 1" % o["gpu_count"])
    # Vast asks carry cuda_max_good; RunPod may omit cudaVersions (its spec: "treat a missing
    # cudaVersions the same as an empty one"), so there it is a note, not a mismatch.
    if p == "vast" and not o.get("host_cuda"): why.append("no host CUDA")
    if p == "runpod" and not o.get("host_cuda"): print("NOTE %s: no CUDA version listed (allowed by the spec; gpurent cannot tell which PyTorch runs)" % o["offer_id"], file=sys.stderr)
    if p == "vast" and o.get("storage_usd_per_gb_month") is None: why.append("no storage price")
    if o.get("currency", "USD") != cur: why.append("currency %s, not %s" % (o.get("currency"), cur))
    if why: print("%s: %s" % (o["offer_id"], ", ".join(why)))
')"
  if [ -n "$bad" ]; then
    while IFS= read -r line; do mismatch "offer $line"; done <<<"$bad"
  fi
  [ "$offers_n" != "0" ] || echo "note: no 1-GPU offer is available now (not a mismatch)"
fi

if [ $rent -eq 0 ]; then
  echo
  echo "read-only check done: $mismatches mismatch(es). Transcript: $GPURENT_HOME/transcript"
  finish
fi

echo
echo "== 4. rent the cheapest 1-GPU offer (costs money)"
[ "${offers_n:-0}" != "0" ] || { echo "nothing to rent"; finish; }
pick="$(py "next((o['offer_id']+'\t'+str(o['price_per_hour_usd'])+'\t'+o['gpu'] for o in sorted(d['offers'], key=lambda o: o['price_per_hour_usd']) if o['price_per_hour_usd'] <= $max_price), '')")"
[ -n "$pick" ] || { echo "no offer at or under $max_price per hour (--max-price)"; finish; }
IFS=$'\t' read -r offer price gpu <<<"$pick"
cur="$(py "next((o.get('currency','USD') for o in d['offers'] if o['offer_id']=='$offer'), 'USD')")"
echo "cheapest: $offer ($gpu) at $price $cur/h — billed from the create until the release is confirmed."
if [ "$provider" = autodl ]; then
  echo "AutoDL lists no price before the create: $price is its documented rate; the machine's own"
  echo "rate is read after the create and compared below."
fi
if [ "$provider" = lambda ] || [ "$provider" = autodl ]; then
  echo "$provider: NO guard on the machine (it would need your full API key there): only this script's"
  echo "trap releases it. If the script is killed, release it by hand at once."
else
  echo "A guard on the machine releases it 15 minutes after the rent, even if this script dies."
fi
if [ ! -t 0 ]; then
  echo "not a terminal: the rent needs you to type the confirmation; nothing was rented"
  finish
fi
printf 'Type  RENT %s  to rent it, anything else to stop: ' "$offer"
read -r answer
if [ "$answer" != "RENT $offer" ]; then
  echo "not confirmed; nothing was rented"
  finish
fi

ssh-keygen -q -t ed25519 -N '' -C gpurent-live-check -f "$GPURENT_HOME/id_live" || exit 1
# The guard logs in with a keychain key only: the throw-away key goes into the OS keychain under a
# one-off label and is deleted from it again on exit (forget_key).
key_label=""
if [ "$provider" != lambda ] && [ "$provider" != autodl ]; then
  gp key import "live-check-$$" "$GPURENT_HOME/id_live"
  if [ $rc -eq 0 ]; then
    key_label="live-check-$$"
  else
    echo "WARNING: the throw-away key could not go into the keychain ($out): no guard on the machine;"
    echo "only this script's trap releases it."
  fi
fi
forget_key() {
  [ -n "$key_label" ] || return 0
  gp key delete "$key_label" --yes
  [ $rc -eq 0 ] || echo "note: delete the throw-away key by hand: gpurent key delete $key_label --yes"
  key_label=""
}
id=""
release() {
  [ -n "$id" ] || { forget_key; return 0; }
  echo
  echo "== release $id"
  gp release "$id" --yes
  [ $rc -eq 0 ] || mismatch "release failed: $out"
  # Only the provider's word ends it: read again until nothing of this machine bills — and no
  # machine that was not there before the rent (a second create) bills either.
  left="(no answer)"
  for i in 1 2 3 4 5 6 7 8; do
    sleep 15
    gp instances
    [ $rc -eq 0 ] || continue
    left="$(py "[r['state'] for r in d['instances'] if r['id']=='$id' and r['closed_ms'] is None] + [f['instance']['id'] for f in d['foreign'] if f['billing'] and f['instance']['id'] not in $before]")"
    if [ "$left" = "[]" ]; then
      echo "confirmed after ${i} read(s): the provider lists nothing of it billing"
      id=""
      forget_key
      return 0
    fi
    echo "still listed: $left"
  done
  mismatch "after the release the provider still lists $left — check its console NOW"
  forget_key
}
trap 'release; echo "done: $mismatches mismatch(es). Transcript: $GPURENT_HOME/transcript"; finish' EXIT
trap 'exit 130' INT TERM

gp rent --provider "$provider" --offer "$offer" -i "$GPURENT_HOME/id_live" --max-price "$price" --yes
id="$(py "(d.get('instance') or {}).get('id') or ''" 2>/dev/null)"
if [ -z "$id" ]; then
  # A failure after the create names the machine: release it by what the error says.
  id="$(printf '%s' "$out" | python3 -c 'import json,re,sys
e=json.load(sys.stdin).get("error",{})
m=re.search(r"gpurent-[0-9a-f]+", (e.get("message") or "")+" "+(e.get("detail") or ""))
print(m.group(0) if m else "")' 2>/dev/null)"
fi
if [ $rc -ne 0 ]; then
  mismatch "rent failed: $out"
  finish
fi
echo "ready: $id at $(py "d['instance']['remote']['ssh']")  (key login proven)"
[ "$(py "d['instance']['ready']")" = "True" ] || mismatch "rent returned but the machine is not ready"
rented="$out"

# Issue 19: the machine must not outlive this check. The guard on it releases it 15 minutes from
# now through the provider's API with the machine's own key (RunPod RUNPOD_API_KEY, Vast
# CONTAINER_API_KEY: docs/guard.md), never --allow-full-key, so your account key is not written
# to the machine. Set after the rent (the login is proven by then), before anything else runs.
if [ -n "$key_label" ]; then
  echo
  echo "== guard: release at a 15-minute deadline, from the machine itself"
  gp guard set "$id" --key "$key_label" --deadline 15m --action release
  if [ $rc -ne 0 ]; then
    mismatch "guard set failed — only this script's trap releases the machine now: $out"
  else
    [ "$(py "d['spec']['deadline_in_s'] == 900 and d['spec']['action'] == 'release' and d['running']")" = "True" ] ||
      mismatch "the guard is not running with a 15-minute release deadline: $out"
    echo "guard running: the machine releases itself by $(py "d.get('deadline_host_s')") (host clock) at the latest"
  fi
fi
out="$rented"
[ "$(py "abs(d['instance']['price_per_hour_usd'] - $price) < 1e-6")" = "True" ] || mismatch "the ledger price differs from the confirmed one"
billed="$(py "d['instance']['remote'].get('price_per_hour_usd')")"
echo "the provider's own price for it: $billed (offer: $price)"
[ "$(py "abs((d['instance']['remote'].get('price_per_hour_usd') or $price) - $price) < 0.005")" = "True" ] ||
  mismatch "the provider bills $billed/h, the offer said $price/h"

if [ $stop_start -eq 1 ]; then
  if [ "$(py "d['instance']['terms']['can_stop']")" = "True" ]; then
    echo
    echo "== stop / start"
    gp stop "$id" --yes
    [ $rc -eq 0 ] || mismatch "stop: $out"
    gp start "$id" --yes
    [ $rc -eq 0 ] || mismatch "start: $out"
  else
    echo "($provider cannot stop: skipped)"
  fi
fi
finish
