#!/usr/bin/env bash
# runner.sh: a runner holding N leased `sleep` instances for one host:
# the CPU the lease costs the host and the runner while idle (% of one
# core: nanoseconds on a CPU from /proc/PID/task/*/schedstat, over IDLE
# seconds), and graft apply's time to start and stop the N through the
# runner, beside the same N as local plugins, in one run: ROUNDS rounds,
# each local then runner (start, then stop), medians and the median of
# each round's runner/local ratio.
#
#   bench/runner.sh [N] [IDLE] [ROUNDS]        defaults 1000 30 5
#
# IDLE 0 skips the CPU figures. GRAFT_PID_NAMESPACE=off in the
# environment runs both the host's and the runner's processes without PID
# namespaces of their own (the same isolation on both sides either way).
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-1000} idle=${2:-30} rounds=${3:-5}

work=$(mktemp -d)
runner_pid=
cleanup() {
  "$work/graft" --file "$work/p/empty.yaml" down >/dev/null 2>&1 || true
  if [ -n "$runner_pid" ] && kill "$runner_pid" 2>/dev/null; then wait "$runner_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
go build -o "$work/graft" ./cmd/graft
sleep=$(command -v sleep)
mkdir -p "$work/p"
gen() { # gen FILE KIND
  {
    echo "name: bench"
    echo "runners: {box: {address: \"unix://$work/runner.sock\"}}"
    echo "plugins:"
    for i in $(seq "$n"); do
      if [ "$2" = runner ]; then
        printf '  s%d: {run: runner, runner: box, command: [%s, "3600"]}\n' "$i" "$sleep"
      else
        printf '  s%d: {command: [%s, "3600"]}\n' "$i" "$sleep"
      fi
    done
  } >"$1"
}
gen "$work/p/runner.yaml" runner
gen "$work/p/local.yaml" local
printf 'name: bench\nrunners: {box: {address: "unix://%s/runner.sock"}}\nplugins: {}\n' "$work" >"$work/p/empty.yaml"

"$work/graft" runner --listen "unix://$work/runner.sock" --state-dir "$work/rstate" 2>"$work/runner.log" &
runner_pid=$!
for _ in $(seq 100); do [ -S "$work/runner.sock" ] && break; sleep 0.05; done
# Start the host first, so the timings below are applies only.
"$work/graft" --file "$work/p/empty.yaml" apply >/dev/null 2>&1
host_pid=$(cat "$work/p/.graft/host.lock")

now() { date +%s%N; }
ms() { echo $(( ($2 - $1) / 1000000 )); }
apply() { # apply FILE: prints the milliseconds graft apply FILE took
  local t0 t1
  t0=$(now); "$work/graft" --file "$work/p/$1" apply >/dev/null; t1=$(now)
  ms "$t0" "$t1"
}
median() { sort -n | awk '{v[NR] = $1} END {if (NR % 2) print v[(NR + 1) / 2]; else printf "%.2f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
cpu_ns() { cat /proc/"$1"/task/*/schedstat 2>/dev/null | awk '{n += $1} END {printf "%d", n}'; }
both_cpu() { # both_cpu: host and runner, over the same IDLE seconds
  local ha ra hb rb
  ha=$(cpu_ns "$host_pid"); ra=$(cpu_ns "$runner_pid"); sleep "$idle"; hb=$(cpu_ns "$host_pid"); rb=$(cpu_ns "$runner_pid")
  echo "$(echo "scale=4; ($hb - $ha) * 100 / ($idle * 10^9)" | bc) $(echo "scale=4; ($rb - $ra) * 100 / ($idle * 10^9)" | bc)"
}

if [ "$idle" != 0 ]; then
  base=$(both_cpu)
  apply runner.yaml >/dev/null
  held=$(both_cpu)
  apply empty.yaml >/dev/null
  apply local.yaml >/dev/null
  lheld=$(both_cpu)
  apply empty.yaml >/dev/null
  read -r bh br <<<"$base"
  read -r hh hr <<<"$held"
  read -r lh _ <<<"$lheld"
  printf '%d sleeps; CPU in %% of one core over %ss idle; lease 15 seconds (renewed every 5)\n' "$n" "$idle"
  printf '%-40s %10s %10s\n' "" "host" "runner"
  printf '%-40s %9s%% %9s%%\n' "idle, nothing running" "$bh" "$br"
  printf '%-40s %9s%% %9s%%\n' "$n held through the runner" "$hh" "$hr"
  printf '%-40s %9s%% %10s\n' "$n local plugins" "$lh" "-"
fi

# Interleaved rounds: local, then runner, so that both see the same load.
: >"$work/times"
for r in $(seq "$rounds"); do
  ls=$(apply local.yaml) lp=$(apply empty.yaml)
  rs=$(apply runner.yaml) rp=$(apply empty.yaml)
  echo "$r $rs $ls $rp $lp" >>"$work/times"
  printf 'round %d: start runner %s ms, local %s ms; stop runner %s ms, local %s ms\n' "$r" "$rs" "$ls" "$rp" "$lp" >&2
done
col() { awk "{print \$$1}" "$work/times" | median; }
ratio() { awk "{printf \"%.4f\\n\", \$$1 / \$$2}" "$work/times" | median; }
range() { awk "{r = \$$1 / \$$2; if (NR == 1 || r < lo) lo = r; if (NR == 1 || r > hi) hi = r} END {printf \"%.2f-%.2f\", lo, hi}" "$work/times"; }
printf 'graft apply, CLI included; %d rounds, local then runner; medians; PID namespaces: %s\n' "$rounds" "${GRAFT_PID_NAMESPACE:-auto}"
printf '%-24s %10s %10s %8s %12s\n' "" "runner" "local" "ratio" "ratio range"
printf '%-24s %7s ms %7s ms %8.2f %12s\n' "start $n" "$(col 2)" "$(col 3)" "$(ratio 2 3)" "$(range 2 3)"
printf '%-24s %7s ms %7s ms %8.2f %12s\n' "stop $n" "$(col 4)" "$(col 5)" "$(ratio 4 5)" "$(range 4 5)"
