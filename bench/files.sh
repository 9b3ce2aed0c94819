#!/usr/bin/env bash
# files.sh: graft plan and graft apply of one plugin whose files: is a
# directory of N empty files, end to end with the CLI and a host: the
# first apply (cold: every file read, the host started), then ROUNDS warm
# plans and applies with nothing changed, then an apply after every file
# was touched (each is read again), then graft down; after each, the
# entries and size of the state dir's digests/.
#
#   bench/files.sh [N] [ROUNDS]        defaults 20000 5
#   GRAFT=/path/to/graft bench/files.sh  # time another build (an older one)
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-20000} rounds=${2:-5}

work=$(mktemp -d)
graft=${GRAFT:-$work/graft}
cleanup() {
  "$graft" down --file "$work/project/plugins.yaml" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
[ -n "${GRAFT:-}" ] || go build -o "$graft" ./cmd/graft
sleep=$(command -v sleep)

mkdir -p "$work/project/static"
(cd "$work/project/static" && seq -f 'f%g' "$n" | xargs touch)
printf 'name: filesbench\nplugins:\n  web:\n    command: [%s, "3600"]\n    files: [static]\n' "$sleep" >"$work/project/plugins.yaml"

now() { date +%s%N; }
ms() { echo $(( ($2 - $1) / 1000000 )); }
median() { printf '%s\n' "$@" | sort -n | sed -n "$(( ($# + 1) / 2 ))p"; }
cache() { printf '%s entries, %s' "$(find "$work/project/.graft/digests" -mindepth 1 -maxdepth 1 ! -name '.*' | wc -l)" "$(du -sh "$work/project/.graft/digests" | cut -f1)"; }
g() { "$graft" "$@" --file "$work/project/plugins.yaml" >/dev/null 2>&1; }

t0=$(now); "$graft" apply "$work/project/plugins.yaml" >/dev/null 2>&1; t1=$(now)
printf 'first apply (cold, starts the host)  %6d ms   digests/: %s\n' "$(ms "$t0" "$t1")" "$(cache)"
declare -a plans applies
for _ in $(seq "$rounds"); do
  t0=$(now); "$graft" plan "$work/project/plugins.yaml" >/dev/null; t1=$(now)
  "$graft" apply "$work/project/plugins.yaml" >/dev/null; t2=$(now)
  plans+=("$(ms "$t0" "$t1")"); applies+=("$(ms "$t1" "$t2")")
done
printf 'graft plan, warm, nothing changed    %6d ms median (%s)\n' "$(median "${plans[@]}")" "${plans[*]}"
printf 'graft apply, warm, nothing changed   %6d ms median (%s)   digests/: %s\n' "$(median "${applies[@]}")" "${applies[*]}" "$(cache)"
(cd "$work/project/static" && seq -f 'f%g' "$n" | xargs touch)
t0=$(now); "$graft" apply "$work/project/plugins.yaml" >/dev/null; t1=$(now)
printf 'graft apply, every file touched      %6d ms   digests/: %s\n' "$(ms "$t0" "$t1")" "$(cache)"
"$graft" down --file "$work/project/plugins.yaml" >/dev/null
printf 'after graft down                                 digests/: %s\n' "$(cache)"
