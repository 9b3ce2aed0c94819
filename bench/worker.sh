#!/usr/bin/env bash
# worker.sh: start and stop N WebAssembly workers (examples/worker) on
# graft's worker placement and, in the same run, N instances of the same
# module on bare wazero with the same settings (the floor), ROUNDS rounds
# interleaved; then N local processes (sleep). Prints the medians and
# graft's ratio to the floor: time, CPU time, the host's memory.
#
#   bench/worker.sh [N] [ROUNDS]        defaults 100 and 5
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
GOOS=wasip1 GOARCH=wasm go build -o "$work/worker.wasm" ./examples/worker
go run ./bench/workerbench -module "$work/worker.wasm" -n "${1:-100}" -rounds "${2:-5}"
