#!/usr/bin/env bash
# runner.sh: a runner holding N leased `sleep` instances for one host:
# the CPU the lease costs the host and the runner while idle (% of one
# core: nanoseconds on a CPU from /proc/PID/task/*/schedstat, over IDLE
# seconds), and graft apply's time to
# start and stop the N through the runner, beside the same N as local
# plugins, in one run.
#
#   bench/runner.sh [N] [IDLE]        defaults 1000 30
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-1000} idle=${2:-30}

work=$(mktemp -d)
runner_pid=
cleanup() {
  "$work/graft" --file "$work/p/empty.yaml" down >/dev/null 2>&1 || true
  [ -n "$runner_pid" ] && kill "$runner_pid" 2>/dev/null && wait "$runner_pid" 2>/dev/null || true
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
cpu_ns() { cat /proc/"$1"/task/*/schedstat 2>/dev/null | awk '{n += $1} END {printf "%d", n}'; }
both_cpu() { # both_cpu: host and runner, over the same IDLE seconds
  local ha ra hb rb
  ha=$(cpu_ns "$host_pid"); ra=$(cpu_ns "$runner_pid"); sleep "$idle"; hb=$(cpu_ns "$host_pid"); rb=$(cpu_ns "$runner_pid")
  echo "$(echo "scale=4; ($hb - $ha) * 100 / ($idle * 10^9)" | bc) $(echo "scale=4; ($rb - $ra) * 100 / ($idle * 10^9)" | bc)"
}

base=$(both_cpu)
t0=$(now); "$work/graft" --file "$work/p/runner.yaml" apply >/dev/null
t1=$(now)
held=$(both_cpu)
t2=$(now); "$work/graft" --file "$work/p/empty.yaml" apply >/dev/null
t3=$(now)
rstart=$(ms "$t0" "$t1") rstop=$(ms "$t2" "$t3")

t0=$(now); "$work/graft" --file "$work/p/local.yaml" apply >/dev/null
t1=$(now)
lheld=$(both_cpu)
t2=$(now); "$work/graft" --file "$work/p/empty.yaml" apply >/dev/null
t3=$(now)
lstart=$(ms "$t0" "$t1") lstop=$(ms "$t2" "$t3")

read -r bh br <<<"$base"
read -r hh hr <<<"$held"
read -r lh _ <<<"$lheld"
printf '%d sleeps; CPU in %% of one core over %ss idle; lease 15 seconds (renewed every 5)\n' "$n" "$idle"
printf '%-40s %10s %10s\n' "" "host" "runner"
printf '%-40s %9s%% %9s%%\n' "idle, nothing running" "$bh" "$br"
printf '%-40s %9s%% %9s%%\n' "$n held through the runner" "$hh" "$hr"
printf '%-40s %9s%% %10s\n' "$n local plugins" "$lh" "-"
printf '%-40s %10s %10s %8s\n' "graft apply, CLI included" "runner" "local" "ratio"
printf '%-40s %7s ms %7s ms %8.2f\n' "start $n" "$rstart" "$lstart" "$(echo "$rstart / $lstart" | bc -l)"
printf '%-40s %7s ms %7s ms %8.2f\n' "stop $n" "$rstop" "$lstop" "$(echo "$rstop / $lstop" | bc -l)"
