#!/usr/bin/env bash
# runnerfleet.sh: runner fleets, with real graft runners and hosts on
# loopback (bench/runnerfleet). Part A: one host drives RUNNERS runners ×
# PLUGINS sleeps; every runner is killed with SIGKILL and started again on
# its state dir, KILLS times, and the host re-applies: the time from the
# restart to every plugin running again, the generations (which must all
# grow and never repeat), and what the host shows meanwhile. Part B: HOSTS
# hosts × HOST_PLUGINS sleeps against one runner, each host connected to
# it directly: the applies' outcome, the lease renewals per second the
# runner answered, the p99 latency of GET /v1/status and of a renewal
# from a client's side, the runner's CPU and RSS, over WINDOW seconds
# quiet and WINDOW probed. Exits 1 when a generation did not grow or
# repeated, or when part B's plugins did not all run.
#
#   bench/runnerfleet.sh [RUNNERS] [PLUGINS] [KILLS] [HOSTS] [HOST_PLUGINS] [WINDOW] [-- runnerfleet flags]
#   defaults 10 100 3 10 100 30   (-parts a or b runs one; -sequential applies part B's hosts in turn)
set -euo pipefail
cd "$(dirname "$0")/.."
runners=${1:-10} plugins=${2:-100} kills=${3:-3} hosts=${4:-10} host_plugins=${5:-100} window=${6:-30}
shift $(( $# < 6 ? $# : 6 ))
[ "${1:-}" = "--" ] && shift

# A runner holds a few descriptors per process, a host per plugin.
ulimit -n "$(ulimit -Hn)"
work=$(mktemp -d)
bench_pid=
# shellcheck disable=SC2317 # called by the trap
cleanup() {
  # runnerfleet stops its runners and hosts itself, on SIGTERM too.
  if [ -n "$bench_pid" ] && kill -TERM "$bench_pid" 2>/dev/null; then wait "$bench_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
go build -o "$work/graft" ./cmd/graft
go build -o "$work/runnerfleet" ./bench/runnerfleet
echo "$(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GB", $2/1048576}' /proc/meminfo), $(go version | cut -d' ' -f3), $(git log -1 --format='graft %h')"
"$work/runnerfleet" -graft "$work/graft" -runners "$runners" -plugins "$plugins" -kills "$kills" \
  -hosts "$hosts" -host-plugins "$host_plugins" -window "${window}s" -root "$work/run" "$@" &
bench_pid=$!
status=0
wait "$bench_pid" || status=$?
bench_pid=
exit "$status"
