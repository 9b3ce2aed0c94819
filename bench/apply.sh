#!/usr/bin/env bash
# apply.sh: graft apply of N plugins and their removal, end to end with
# the CLI (and, on the first apply, starting the host), beside
# supervisorctl start all / stop all of the same N programs, in one run.
# Installs supervisor (Debian's 4.2.5) when it is missing.
#
#   bench/apply.sh [N] [ROUNDS]        defaults 200 5
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-200} rounds=${2:-5}

if ! command -v supervisord >/dev/null; then
  echo "installing supervisor..." >&2
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq supervisor) >/dev/null
fi

work=$(mktemp -d)
cleanup() {
  "$work/graft" down -f "$work/project/plugins.yaml" >/dev/null 2>&1 || true
  if [ -f "$work/supervisord.pid" ]; then kill "$(cat "$work/supervisord.pid")" 2>/dev/null || true; fi
  sleep 0.5
  rm -rf "$work"
}
trap cleanup EXIT
go build -o "$work/graft" ./cmd/graft
sleep=$(command -v sleep)

mkdir -p "$work/project"
{
  echo "name: bench"
  echo "plugins:"
  for i in $(seq "$n"); do printf '  s%d: {command: [%s, "3600"]}\n' "$i" "$sleep"; done
} >"$work/project/plugins.yaml"
printf 'name: bench\nplugins: {}\n' >"$work/project/empty.yaml"

# supervisord with the same programs; startsecs=0 so that "started" is not
# held back by its default one-second settling time.
{
  printf '[unix_http_server]\nfile=%s/supervisor.sock\n' "$work"
  printf '[supervisord]\npidfile=%s/supervisord.pid\nlogfile=%s/supervisord.log\nminfds=4096\n' "$work" "$work"
  printf '[rpcinterface:supervisor]\nsupervisor.rpcinterface_factory = supervisor.rpcinterface:make_main_rpcinterface\n'
  printf '[supervisorctl]\nserverurl=unix://%s/supervisor.sock\n' "$work"
  for i in $(seq "$n"); do
    printf '[program:s%d]\ncommand=%s 3600\nautostart=false\nstartsecs=0\nstdout_logfile=NONE\nstderr_logfile=NONE\n' "$i" "$sleep"
  done
} >"$work/supervisord.conf"
supervisord -c "$work/supervisord.conf"
ctl() { supervisorctl -c "$work/supervisord.conf" "$@" >/dev/null; }
for _ in $(seq 50); do ctl status >/dev/null 2>&1 && break; sleep 0.1; done

now() { date +%s%N; }
ms() { echo $(( ($2 - $1) / 1000000 )); }
median() { printf '%s\n' "$@" | sort -n | sed -n "$(( ($# + 1) / 2 ))p"; }
declare -a gfirst gstart gstop sstart sstop
for r in $(seq "$rounds"); do
  # The first round's apply starts the host too; later rounds find it.
  t0=$(now); "$work/graft" apply "$work/project/plugins.yaml" >/dev/null 2>&1
  t1=$(now); "$work/graft" apply "$work/project/empty.yaml" >/dev/null
  t2=$(now)
  if [ "$r" -eq 1 ]; then gfirst+=("$(ms "$t0" "$t1")"); else gstart+=("$(ms "$t0" "$t1")"); fi
  gstop+=("$(ms "$t1" "$t2")")
  t0=$(now); ctl start all
  t1=$(now); ctl stop all
  t2=$(now)
  sstart+=("$(ms "$t0" "$t1")"); sstop+=("$(ms "$t1" "$t2")")
done

gs=$(median "${gstart[@]}") gp=$(median "${gstop[@]}") ss=$(median "${sstart[@]}") sp=$(median "${sstop[@]}")
printf '%d plugins, medians of %d rounds, CLI included (supervisord %s)\n' "$n" "$rounds" "$(supervisord --version)"
printf '%-34s %10s\n' "graft apply, host started too" "${gfirst[0]} ms"
printf '%-34s %10s %14s %8s\n' "" "graft" "supervisorctl" "ratio"
printf '%-34s %7s ms %11s ms %7.2f\n' "start all (graft apply)" "$gs" "$ss" "$(echo "$gs / $ss" | bc -l)"
printf '%-34s %7s ms %11s ms %7.2f\n' "stop all (graft apply of nothing)" "$gp" "$sp" "$(echo "$gp / $sp" | bc -l)"
