#!/usr/bin/env bash
# worker.sh: start and stop N WebAssembly workers (examples/worker) beside
# N local processes (sleep) in one run: time, and the host's memory.
#
#   bench/worker.sh [N]        default 100
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
GOOS=wasip1 GOARCH=wasm go build -o "$work/worker.wasm" ./examples/worker
go run ./bench/workerbench -module "$work/worker.wasm" -n "${1:-100}"
