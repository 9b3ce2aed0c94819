#!/usr/bin/env bash
# deploy.sh: replacements of an HTTP plugin under load, each way graft can
# replace it, in one run on one machine (bench/deploybench): stop-first
# with the plugin binding its own port, stop-first and start-first on a
# socket graft holds (listen:), and graft upgrade. It prints the requests,
# the failures and the latency percentiles of each way, with a new
# connection for every request and with kept-alive ones.
#
#   bench/deploy.sh [ROUNDS]        default 5
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-5}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
go build -o "$work/graft" ./cmd/graft
go build -o "$work/deploybench" ./bench/deploybench
"$work/deploybench" -graft "$work/graft" -rounds "$rounds"
