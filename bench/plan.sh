#!/usr/bin/env bash
# plan.sh: time `graft plan` end to end on a generated plugins file of
# 10,000 plugins with 30,000 uses edges, against the running state of an
# older version in which one plugin in a hundred differs. Uses hyperfine
# when it is installed (apt-get install hyperfine), else a plain loop.
#
#   bench/plan.sh [PLUGINS] [EDGES] [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."
plugins=${1:-10000} edges=${2:-30000} runs=${3:-10}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
go build -o "$work/graft" ./cmd/graft
go run ./bench/genspec -plugins "$plugins" -edges "$edges" -out "$work/plugins.yaml" -state "$work/state.json"
printf 'plugins.yaml: %s bytes; state.json: %s bytes\n' "$(wc -c <"$work/plugins.yaml")" "$(wc -c <"$work/state.json")"
"$work/graft" plan --state "$work/state.json" "$work/plugins.yaml" >"$work/plan.txt"
head -1 "$work/plan.txt"

cmds=(
  "$work/graft validate $work/plugins.yaml"
  "$work/graft plan --state $work/state.json $work/plugins.yaml"
  "$work/graft plan --json --state $work/state.json $work/plugins.yaml"
)
if command -v hyperfine >/dev/null; then
  hyperfine --warmup 1 --runs "$runs" --output null "${cmds[@]}"
  exit
fi
for cmd in "${cmds[@]}"; do
  start=$(date +%s%N)
  for _ in $(seq "$runs"); do $cmd >/dev/null; done
  end=$(date +%s%N)
  printf '%-45s %6d ms per run (%d runs)\n' "$(sed "s|$work/||g" <<<"$cmd")" $(((end - start) / runs / 1000000)) "$runs"
done
