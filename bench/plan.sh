#!/usr/bin/env bash
# plan.sh: time `graft plan` end to end on a generated plugins file of
# 10,000 plugins with 30,000 uses edges, against the running state of an
# older version in which one plugin in a hundred differs; beside, as a
# floor measured in the same run, a process that only parses the same file
# with yaml.v3. Rounds interleave the floor and each graft command; the
# medians are reported, with graft plan's ratio to the floor and to the
# 300 ms target. Then bench/loadbench times spec.Load beside the bare
# yaml.v3 parse in one process.
#
#   bench/plan.sh [PLUGINS] [EDGES] [ROUNDS]
set -euo pipefail
cd "$(dirname "$0")/.."
plugins=${1:-10000} edges=${2:-30000} rounds=${3:-10}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
go build -o "$work/graft" ./cmd/graft
go build -o "$work/loadbench" ./bench/loadbench
go run ./bench/genspec -plugins "$plugins" -edges "$edges" -out "$work/plugins.yaml" -state "$work/state.json"
printf 'plugins.yaml: %s bytes; state.json: %s bytes\n' "$(wc -c <"$work/plugins.yaml")" "$(wc -c <"$work/state.json")"
"$work/graft" plan --state "$work/state.json" "$work/plugins.yaml" >"$work/plan.txt"
head -1 "$work/plan.txt"

names=(
  "bare yaml.v3 parse (floor)"
  "graft validate"
  "graft plan --state (text)"
  "graft plan --json --state"
)
cmds=(
  "$work/loadbench -yaml -file $work/plugins.yaml"
  "$work/graft validate $work/plugins.yaml"
  "$work/graft plan --state $work/state.json $work/plugins.yaml"
  "$work/graft plan --json --state $work/state.json $work/plugins.yaml"
)
# ms runs a command once, its output discarded, and prints its wall time
# in milliseconds.
ms() {
  local start end
  start=$(date +%s%N)
  $1 >/dev/null
  end=$(date +%s%N)
  echo $(((end - start) / 1000000))
}
for i in "${!cmds[@]}"; do ms "${cmds[$i]}" >/dev/null; done # warm up
declare -A times
for _ in $(seq "$rounds"); do
  for i in "${!cmds[@]}"; do times[$i]+="$(ms "${cmds[$i]}") "; done
done
median() { tr ' ' '\n' | grep . | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
range() { tr ' ' '\n' | grep . | sort -n | awk 'NR==1 {lo=$1} {hi=$1} END {print lo "–" hi}'; }
floor=$(median <<<"${times[0]}")
for i in "${!cmds[@]}"; do
  m=$(median <<<"${times[$i]}")
  printf '%-28s median %5d ms (%s ms) over %d rounds; %5.2f× the floor\n' \
    "${names[$i]}" "$m" "$(range <<<"${times[$i]}")" "$rounds" "$(awk "BEGIN {print $m / $floor}")"
done
plan=$(median <<<"${times[2]}")
printf 'graft plan --state, end to end: %d ms = %.2f× the 300 ms target\n' "$plan" "$(awk "BEGIN {print $plan / 300}")"
"$work/loadbench" -file "$work/plugins.yaml" -rounds "$rounds"
