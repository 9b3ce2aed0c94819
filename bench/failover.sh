#!/usr/bin/env bash
# failover.sh: how long a floating plugin goes without a leader, over
# KILLS kill -9 rounds of the leader's host (against ttl + poll, or etcd's
# session TTL) and STOPS graceful stops (against poll), with HOSTS real
# graft hosts on this machine sharing one election directory, then electing
# on a real etcd server (Debian's etcd-server) it starts on loopback, in one
# run. The plugin is examples/plugins/kv.
#
#   bench/failover.sh [HOSTS] [KILLS] [STOPS] [-- failoverbench flags]   defaults 3 20 10
#   (-backends file or etcd measures one)
set -euo pipefail
cd "$(dirname "$0")/.."
hosts=${1:-3} kills=${2:-20} stops=${3:-10}
shift $(( $# < 3 ? $# : 3 ))
[ "${1:-}" = "--" ] && shift

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
go build -o "$work/graft" ./cmd/graft
go build -o "$work/kv" ./examples/plugins/kv
go build -o "$work/failoverbench" ./bench/failoverbench
"$work/failoverbench" -graft "$work/graft" -server "$work/kv" -hosts "$hosts" -kills "$kills" -stops "$stops" "$@"
