#!/usr/bin/env bash
# fleet.sh: a fleet of real graft hosts electing floating plugins through
# faults (internal/fleet): HOSTS hosts with PLUGINS floating plugins each on
# a real 3-member etcd cluster on loopback (Debian's etcd-server), then
# FILE_HOSTS hosts on one shared directory, FAULTS faults of each kind at
# random moments. Each plugin holds a flock while it runs, so two leaders at
# once are seen, not inferred. Prints, per kind of fault, the violations,
# the failover times and the plugins left without a leader, and the load
# per host. Exits 1 on a violation or a plugin left without a leader.
#
#   bench/fleet.sh [HOSTS] [PLUGINS] [FAULTS] [FILE_HOSTS] [-- fleetbench flags]   defaults 100 10 3 20
#   (-backends etcd or file runs one; -seed N replays a run's choices)
set -euo pipefail
cd "$(dirname "$0")/.."
hosts=${1:-100} plugins=${2:-10} faults=${3:-3} file_hosts=${4:-20}
shift $(( $# < 4 ? $# : 4 ))
[ "${1:-}" = "--" ] && shift

if ! command -v etcd >/dev/null; then
  echo "fleet.sh: installing etcd-server" >&2
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq etcd-server) >/dev/null
fi
# Each host holds a few descriptors per plugin, and the harness three
# proxied connections per host.
ulimit -n "$(ulimit -Hn)"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
go build -o "$work/graft" ./cmd/graft
go build -o "$work/fleetbench" ./bench/fleetbench
echo "$(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GB", $2/1048576}' /proc/meminfo), $(go version | cut -d' ' -f3), etcd $(etcd --version | awk '/etcd Version/ {print $3}')"
"$work/fleetbench" -graft "$work/graft" -hosts "$hosts" -plugins "$plugins" -faults "$faults" \
  -file-hosts "$file_hosts" -root "$work/run" "$@"
