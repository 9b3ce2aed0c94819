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
# Then the same plugins and edges, each plugin with an env of 3 to 5
# entries, all new: `graft plan` of that file with no host and no state
# dir (against an empty state), beside the bare yaml.v3 parse of that
# file, interleaved, and the ratio of their medians, whose target is 2.5×.
#
#   bench/plan.sh [PLUGINS] [EDGES] [ROUNDS] [CASES]
#     defaults 10000 30000 10 all; CASES: all, state (the first part), new
#     (the second)
#   GRAFT=/path/to/graft bench/plan.sh ...   # time another build
set -euo pipefail
cd "$(dirname "$0")/.."
plugins=${1:-10000} edges=${2:-30000} rounds=${3:-10} cases=${4:-all}
case $cases in
all | state | new) ;;
*)
  echo "plan.sh: CASES is all, state or new, not $cases" >&2
  exit 2
  ;;
esac

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
graft=${GRAFT:-$work/graft}
[ -n "${GRAFT:-}" ] || go build -o "$graft" ./cmd/graft
go build -o "$work/loadbench" ./bench/loadbench

# ms runs a command once, its output discarded, and prints its wall time
# in milliseconds; when it fails, it shows what it said on stderr.
ms() {
  local start end
  start=$(date +%s%N)
  if ! $1 >/dev/null 2>"$work/stderr"; then
    cat "$work/stderr" >&2
    return 1
  fi
  end=$(date +%s%N)
  echo $(((end - start) / 1000000))
}
median() { tr ' ' '\n' | grep . | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
range() { tr ' ' '\n' | grep . | sort -n | awk 'NR==1 {lo=$1} {hi=$1} END {print lo "–" hi}'; }

# measure runs the commands of cmds, the first of them the floor, once
# each to warm up, then in rounds that interleave them, and prints each
# one's median (with names), its range and its ratio to the floor's. The
# rounds stay in times, by the command's index.
declare -A times
measure() {
  local i m floor
  times=()
  for i in "${!cmds[@]}"; do ms "${cmds[$i]}" >/dev/null; done # warm up
  for _ in $(seq "$rounds"); do
    for i in "${!cmds[@]}"; do times[$i]+="$(ms "${cmds[$i]}") "; done
  done
  floor=$(median <<<"${times[0]}")
  for i in "${!cmds[@]}"; do
    m=$(median <<<"${times[$i]}")
    printf '%-28s median %5d ms (%s ms) over %d rounds; %5.2f× the floor\n' \
      "${names[$i]}" "$m" "$(range <<<"${times[$i]}")" "$rounds" "$(awk "BEGIN {print $m / $floor}")"
  done
}

if [ "$cases" != new ]; then
  go run ./bench/genspec -plugins "$plugins" -edges "$edges" -out "$work/plugins.yaml" -state "$work/state.json"
  printf 'plugins.yaml: %s bytes; state.json: %s bytes\n' "$(wc -c <"$work/plugins.yaml")" "$(wc -c <"$work/state.json")"
  "$graft" plan --state "$work/state.json" "$work/plugins.yaml" >"$work/plan.txt"
  head -1 "$work/plan.txt"

  names=(
    "bare yaml.v3 parse (floor)"
    "graft validate"
    "graft plan --state (text)"
    "graft plan --json --state"
  )
  cmds=(
    "$work/loadbench -yaml -file $work/plugins.yaml"
    "$graft validate $work/plugins.yaml"
    "$graft plan --state $work/state.json $work/plugins.yaml"
    "$graft plan --json --state $work/state.json $work/plugins.yaml"
  )
  measure
  plan=$(median <<<"${times[2]}")
  printf 'graft plan --state, end to end: %d ms = %.2f× the 300 ms target\n' "$plan" "$(awk "BEGIN {print $plan / 300}")"
  "$work/loadbench" -file "$work/plugins.yaml" -rounds "$rounds"
fi

if [ "$cases" != state ]; then
  # A directory of its own: no state dir beside the file, so no host, and
  # graft plan compares with an empty state.
  mkdir "$work/new"
  new=$work/new/plugins.yaml
  go run ./bench/genspec -plugins "$plugins" -edges "$edges" -env-min 3 -env-max 5 -out "$new"
  printf 'new/plugins.yaml (3–5 env entries a plugin, no state): %s bytes\n' "$(wc -c <"$new")"
  "$graft" plan "$new" >"$work/new-plan.txt" 2>/dev/null
  head -1 "$work/new-plan.txt"
  names=(
    "bare yaml.v3 parse (floor)"
    "graft plan (new, no state)"
  )
  cmds=(
    "$work/loadbench -yaml -file $new"
    "$graft plan $new"
  )
  measure
  ratio=$(awk "BEGIN {print $(median <<<"${times[1]}") / $(median <<<"${times[0]}")}")
  printf 'graft plan of new plugins with env, end to end: %.2f× the floor = %.2f× the 2.5× target\n' "$ratio" "$(awk "BEGIN {print $ratio / 2.5}")"
fi
