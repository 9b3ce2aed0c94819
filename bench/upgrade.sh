#!/usr/bin/env bash
# upgrade.sh: graft upgrade of a host running N local plugins, beside a
# plain restart of the host (SIGTERM, then a new host), in one run on one
# machine. For each round it reports the time from the request to the new
# host serving, and the longest a plugin went without supervision: for an
# upgrade, the time its processes were unwatched (graft status), and the
# time from the old program's record of a floating plugin's term to the
# new one's taking it back (within one renew, 3 seconds, to be safe); for
# a restart, the time its plugins were down
# (stopped, then started again).
#
#   bench/upgrade.sh [N] [ROUNDS]        defaults 1000 3
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-1000} rounds=${2:-3}

work=$(mktemp -d)
cleanup() {
  if [ -x "$work/graft-a" ] && [ -f "$work/plugins.yaml" ]; then
    "$work/graft-a" --file "$work/plugins.yaml" down >/dev/null 2>&1 || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT

for v in a b; do
  go build -o "$work/graft-$v" -ldflags "-X github.com/graftland/graft/internal/skew.release=v0.0.0-bench-$v" ./cmd/graft
done
{
  echo "name: upgradebench"
  echo "plugins:"
  for i in $(seq "$n"); do echo "  p$i: {command: [sleep, \"100000\"]}"; done
  # A floating plugin this host leads: its term is taken back across the
  # upgrade; the log says how long after its last renewal.
  echo "  leader: {run: floating, command: [sleep, \"100000\"], elect: {dir: $work/shared, address: \"127.0.0.1:1\"}}"
} >"$work/plugins.yaml"
mkdir "$work/shared"
g() { "$work/graft-a" --file "$work/plugins.yaml" "$@"; }
ms() { date +%s%3N; }

g apply >/dev/null 2>&1
echo "graft upgrade and a plain restart of a host running $n local plugins, $rounds rounds"
printf '%-8s %-22s %-24s %-22s\n' round "upgrade: serving/gap" "term: handover" "restart: serving/gap"
for r in $(seq "$rounds"); do
  # An upgrade from a to b (the restart below brings a back).
  t0=$(ms)
  g upgrade --binary "$work/graft-b" >/dev/null
  t1=$(ms)
  gap=$(g status --json | python3 -c '
import json, sys
st = json.load(sys.stdin)
print(max((p.get("adopted") or {}).get("gapMillis", 0) for p in st["plugins"]))')
  pids=$(g status --json | python3 -c '
import json, sys
print(" ".join(str(p["pid"]) for p in json.load(sys.stdin)["plugins"]))')

  # A plain restart: the host stops every plugin, then a new one starts
  # them all again; the gap is from the first stop to the last start.
  host=$(cat "$work/.graft/host.lock")
  t2=$(ms)
  kill -TERM "$host"
  while kill -0 "$host" 2>/dev/null; do sleep 0.01; done
  g apply >/dev/null 2>&1
  t3=$(ms)
  term=$(grep 'took back the lead' "$work/.graft/host.log" | tail -1 | sed 's/.*handover=\([^ ]*\).*/\1/')
  printf '%-8s %-22s %-24s %-22s\n' "$r" "$((t1 - t0)) ms / ${gap} ms" "$term" "$((t3 - t2)) ms / $((t3 - t2)) ms"
  # The upgrade kept every process: the restart replaced them.
  after=$(g status --json | python3 -c '
import json, sys
print(" ".join(str(p["pid"]) for p in json.load(sys.stdin)["plugins"]))')
  [ "$pids" != "$after" ] || { echo "the restart kept the processes?" >&2; exit 1; }
done
