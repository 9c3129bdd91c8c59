#!/usr/bin/env bash
# The two-site demo: MTA-A and MTA-B from config/examples on loopback (SQLite stores in a
# fresh temporary folder), one message of each STANAG 4406 precedence from a user at site A
# to a user at site B with a delivery report asked for, B's mailbox with the precedences,
# the delivery reports in A's mailbox, A's connection slots, then both MTAs stopped.
#
#   deploy/demo.sh            (make demo: installs the project first)
#   BIN=/usr/bin deploy/demo.sh   to use installed commands
#   KEEP=1 deploy/demo.sh         to keep the folder with the logs and stores
#   EXTRA=600 deploy/demo.sh      to send 600 routine messages more first: each mailbox
#                                 listing is then larger than a pipe's buffer
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-.venv/bin}
for tool in x400-mta x400 x400ctl; do
  [ -x "$BIN/$tool" ] || { echo "demo: $BIN/$tool is missing: run 'make install' first" >&2; exit 1; }
done
for port in 5000 5001 5002 5003 5100 5101 5102 5103; do
  if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
    echo "demo: port $port on 127.0.0.1 is in use; the example configs need 5000-5003 and 5100-5103" >&2
    exit 1
  fi
done

work=$(mktemp -d "${TMPDIR:-/tmp}/aiox400-demo.XXXXXX")
cp config/examples/site-a.toml config/examples/site-b.toml "$work/"
pids=()
stop_all() {
  local pid
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  pids=()
}
cleanup() {
  stop_all
  if [ -n "${KEEP:-}" ]; then echo "demo: logs and stores kept in $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT

A="C=GB;ADMD= ;PRMD=SITEA;O=HQ;OU=J3;S=Smith;G=John"
B="C=GB;ADMD= ;PRMD=SITEB;O=FOB;OU=OPS;S=Jones;G=Anne"
LEVELS=(override flash immediate priority routine deferred)

say() { printf '\n== %s\n' "$*"; }
# until SECONDS CMD...: run CMD every 0.2 s until it succeeds, or fail after SECONDS.
until_ok() {
  local deadline=$((SECONDS + $1)); shift
  until "$@" >/dev/null 2>&1; do
    (( SECONDS < deadline )) || { echo "demo: gave up waiting for: $*" >&2; return 1; }
    sleep 0.2
  done
}
count_at_least() {  # count_at_least N CONFIG USER: the mailbox holds N entries or more
  local listing n
  listing=$("$BIN/x400" inbox -c "$work/$2" -u "$3") || return 1
  n=$(grep -cE '^ +[0-9]+ ' <<<"$listing") || true
  (( n >= $1 ))
}

say "starting MTA-A and MTA-B (logs: $work/site-*.log)"
"$BIN/x400-mta" -c "$work/site-a.toml" >"$work/site-a.log" 2>&1 & pids+=($!)
"$BIN/x400-mta" -c "$work/site-b.toml" >"$work/site-b.log" 2>&1 & pids+=($!)
until_ok 30 "$BIN/x400ctl" status -c "$work/site-a.toml"
until_ok 30 "$BIN/x400ctl" status -c "$work/site-b.toml"
"$BIN/x400ctl" status -c "$work/site-a.toml"

say "sending one message of each precedence from $A to $B"
for level in "${LEVELS[@]}"; do
  printf '%-10s ' "$level"
  "$BIN/x400" send -c "$work/site-a.toml" --from "$A" --to "$B" --precedence "$level" \
    --subject "DEMO $level" --body "A $level message from site A." --delivery-report
done

EXTRA=${EXTRA:-0}
if (( EXTRA > 0 )); then
  printf '%-10s %s messages more (identifiers in %s)\n' routine "$EXTRA" "$work/extra.ids"
  "$BIN/x400" send -c "$work/site-a.toml" --from "$A" --to "$B" --precedence routine \
    --subject "DEMO routine backlog" --body "One of many." --count "$EXTRA" >"$work/extra.ids"
fi

until_ok $((60 + EXTRA / 5)) count_at_least $((6 + EXTRA)) site-b.toml "$B"
until_ok 60 count_at_least 6 site-a.toml "$A"

say "site B: the mailbox of $B"
"$BIN/x400" inbox -c "$work/site-b.toml" -u "$B"
say "site B: the flash message"
# The listing is read whole before it is searched: no command here writes into a pipe
# whose reader may stop early (under pipefail, the writer's 141 would end the demo).
listing=$("$BIN/x400" inbox -c "$work/site-b.toml" -u "$B")
flash_id=$(awk '$3 == "flash" {print $1; exit}' <<<"$listing")
"$BIN/x400" read "$flash_id" -c "$work/site-b.toml" -u "$B"
say "site A: delivery reports in the mailbox of $A"
"$BIN/x400" inbox -c "$work/site-a.toml" -u "$A"
say "site A: connection slots to MTA-B"
"$BIN/x400ctl" channels -c "$work/site-a.toml"
say "site A: the log of the flash message"
grep -m 4 -E "flash" "$work/site-a.log"

say "stopping both MTAs"
stop_all
tail -n 1 "$work/site-a.log" "$work/site-b.log"
