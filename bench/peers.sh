#!/usr/bin/env bash
# peers.sh: graft beside supervisord and pm2, in one run on one machine,
# each driven the way its users drive it: start N sleeps, change one of
# them, remove them all, for each N given. Each step is timed from the
# command until its effect is seen among the daemon's children in /proc
# (a peer may answer before its processes run or exit); "replaced" is how
# many of the N got a new pid when one was changed.
#
#   graft:       graft apply plugins.yaml (host started beforehand, warm)
#   supervisord: edit supervisord.conf, supervisorctl update
#   pm2:         edit ecosystem.config.js, pm2 start ecosystem.config.js;
#                pm2 delete ecosystem.config.js to remove
#
# Installs what is missing: Debian's supervisor with apt-get, and pm2 with
# npm into the bench's own directory ($GRAFT_BENCH_CACHE, by default
# ~/.cache/graft-bench/pm2), never globally. Everything it starts runs
# from a temporary directory (pm2's PM2_HOME included) and is stopped on exit.
#
#   bench/peers.sh [ROUNDS] [N...]        defaults 1, and N = 100 1000
#   PEERS_TIMEOUT=SECONDS                  a step still unfinished after it is
#                                          reported as ">SECONDS s" (default 30)
#
# The defaults finish in about three minutes for N = 1000: supervisorctl
# update removes about one program a second, and pm2 restarts all N on a
# change, so without the timeout one round of 1000 would take over 15.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-1}
shift || true
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(100 1000)
timeout=${PEERS_TIMEOUT:-30}

if ! command -v supervisord >/dev/null; then
  echo "installing supervisor..." >&2
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq supervisor) >/dev/null
fi
cache=${GRAFT_BENCH_CACHE:-$HOME/.cache/graft-bench}
pm2=$cache/pm2/node_modules/.bin/pm2
if [ ! -x "$pm2" ]; then
  echo "installing pm2 with npm into $cache/pm2..." >&2
  mkdir -p "$cache/pm2"
  npm install --prefix "$cache/pm2" --no-audit --no-fund pm2 >/dev/null
fi

work=$(mktemp -d)
pm2home=$work/pm2home
# p2: pm2 with this run's PM2_HOME, given to pm2 alone, so that only pm2's
# daemon and its apps carry it (pm2_kill finds what is left by it).
p2() { PM2_HOME=$pm2home "$pm2" "$@"; }
# pm2_kill: pm2 kill, and then the apps it left running: a pm2 killed in
# the middle of restarting or deleting many leaves some behind. They are
# known by the PM2_HOME pm2 gave them, this run's own.
pm2_kill() {
  p2 kill >/dev/null 2>&1 || true
  local left
  left=$(grep -lzx "PM2_HOME=$pm2home" /proc/[0-9]*/environ 2>/dev/null | cut -d/ -f3 || true)
  # shellcheck disable=SC2086 # one pid a word
  [ -z "$left" ] || kill $left 2>/dev/null || true
}
cleanup() {
  if [ -f "$work/p/empty.yaml" ]; then "$work/graft" --file "$work/p/empty.yaml" down >/dev/null 2>&1 || true; fi
  if [ -f "$work/supervisord.pid" ]; then kill "$(cat "$work/supervisord.pid")" 2>/dev/null || true; fi
  [ -d "$pm2home" ] && pm2_kill
  sleep 0.5
  rm -rf "$work"
}
trap cleanup EXIT
go build -o "$work/graft" ./cmd/graft
sleep=$(command -v sleep)
mkdir -p "$work/p"

# Configuration writers: every one takes N (0 for none) and CHANGED, the
# plugin whose command is sleep 3601 instead of 3600 (0 for none).
graft_conf() {
  {
    echo "name: bench"
    if [ "$1" -eq 0 ]; then echo "plugins: {}"; else echo "plugins:"; fi
    for i in $(seq "$1"); do
      printf '  s%d: {command: [%s, "%d"]}\n' "$i" "$sleep" $((i == $2 ? 3601 : 3600))
    done
  } >"$work/p/plugins.yaml"
}
# startsecs=0 so that "running" is not held back by supervisord's default
# one-second settling time; output discarded, as pm2's and graft's is kept
# only in files.
sup_conf() {
  {
    printf '[unix_http_server]\nfile=%s/supervisor.sock\n' "$work"
    printf '[supervisord]\npidfile=%s/supervisord.pid\nlogfile=%s/supervisord.log\nminfds=8192\nminprocs=4096\n' "$work" "$work"
    printf '[rpcinterface:supervisor]\nsupervisor.rpcinterface_factory = supervisor.rpcinterface:make_main_rpcinterface\n'
    printf '[supervisorctl]\nserverurl=unix://%s/supervisor.sock\n' "$work"
    for i in $(seq "$1"); do
      printf '[program:s%d]\ncommand=%s %d\nstartsecs=0\nstdout_logfile=NONE\nstderr_logfile=NONE\n' \
        "$i" "$sleep" $((i == $2 ? 3601 : 3600))
    done
  } >"$work/supervisord.conf"
}
pm2_conf() {
  {
    echo "module.exports = { apps: ["
    for i in $(seq "$1"); do
      printf "  {name: 's%d', script: '%s', args: '%d', interpreter: 'none'},\n" "$i" "$sleep" $((i == $2 ? 3601 : 3600))
    done
    echo "] };"
  } >"$work/ecosystem.config.js"
}

# Commands, as users run them.
graft_apply() { "$work/graft" --file "$work/p/plugins.yaml" apply >/dev/null; }
sup_update() { supervisorctl -c "$work/supervisord.conf" update >/dev/null; }
pm2_start() { p2 start "$work/ecosystem.config.js" >/dev/null; }
pm2_delete() { p2 delete "$work/ecosystem.config.js" >/dev/null; }

# Start the three daemons, warm, before anything is timed.
graft_conf 0 0
cp "$work/p/plugins.yaml" "$work/p/empty.yaml"
graft_apply 2>/dev/null
graft_pid=$(cat "$work/p/.graft/host.lock")
# graft's plugins are the children of the init of its PID namespace, where
# it has one (graft-init, the host's child); else of the host itself.
init=$(ps -o pid=,args= --ppid "$graft_pid" | awk '$2 == "graft-init" {print $1}')
[ -n "$init" ] && graft_pid=$init
sup_conf 0 0
supervisord -c "$work/supervisord.conf"
for _ in $(seq 50); do supervisorctl -c "$work/supervisord.conf" pid >/dev/null 2>&1 && break; sleep 0.1; done
sup_pid=$(cat "$work/supervisord.pid")
p2 ping >/dev/null
pm2_pid=$(cat "$pm2home/pm2.pid")

pid_of() { case $1 in graft) echo "$graft_pid" ;; supervisord) echo "$sup_pid" ;; pm2) echo "$pm2_pid" ;; esac; }
# fresh TOOL: a daemon whose removal timed out still has processes (a killed
# supervisorctl or pm2 leaves the programs it had not reached): it is stopped, which
# stops them, and started again with nothing, so the next round starts clean.
fresh() {
  case $1 in
    supervisord)
      kill "$sup_pid"
      while kill -0 "$sup_pid" 2>/dev/null; do sleep 0.1; done
      sup_conf 0 0
      supervisord -c "$work/supervisord.conf"
      for _ in $(seq 50); do supervisorctl -c "$work/supervisord.conf" pid >/dev/null 2>&1 && break; sleep 0.1; done
      sup_pid=$(cat "$work/supervisord.pid")
      ;;
    pm2)
      pm2_kill
      p2 ping >/dev/null 2>&1
      pm2_pid=$(cat "$pm2home/pm2.pid")
      ;;
    *) echo "$1 still runs processes after its removal" >&2; exit 1 ;;
  esac
}
now() { date +%s%N; }
kids() { ps -o pid= --ppid "$1" | sort -n; }
# step DAEMON WANT COMMAND...: runs COMMAND and prints the milliseconds until
# DAEMON has WANT children, and (when $before names a file of pids) at least
# one not in it. The command's return counts if the effect is there already.
step() {
  local daemon=$1 want=$2 t0 t1 deadline
  shift 2
  local cmd wd
  t0=$(now)
  "$@" 2>>"$work/steps.log" & # a command stopped at the timeout complains there
  cmd=$!
  # A watchdog, so that a command still busy after the timeout is stopped.
  sleep "$timeout" &
  wd=$!
  wait -n "$cmd" "$wd" || true
  t1=$(now)
  if kill "$wd" 2>/dev/null; then
    wait "$wd" 2>/dev/null || true
  else
    kill "$cmd" 2>/dev/null || true
    wait "$cmd" 2>/dev/null || true
    echo ">$((timeout * 1000))"
    return
  fi
  deadline=$((t1 + timeout * 1000000000))
  while :; do
    kids "$daemon" >"$work/after"
    if [ "$(wc -l <"$work/after")" -eq "$want" ] &&
      { [ -z "$before" ] || [ -n "$(comm -13 "$before" "$work/after")" ]; }; then
      break
    fi
    if [ "$(now)" -gt "$deadline" ]; then echo ">$((timeout * 1000))"; return; fi
    sleep 0.005
    t1=$(now)
  done
  echo $(((t1 - t0) / 1000000))
}
# median: of figures some of which may be ">TIMEOUT" (kept as such when the
# median is one of them).
median() { printf '%s\n' "$@" | sed 's/^>\(.*\)/\1 >/' | sort -n | sed -n "$((($# + 1) / 2))p" | sed 's/^\(.*\) >$/>\1/'; }

# ratio A B: A / B as "N.NNx", where A or B may be ">TIMEOUT" (a bound).
ratio() {
  local a=${1#>} b=${2#>} bound=
  [ "$a" != "$1" ] && bound='>'
  [ "$b" != "$2" ] && { echo '?'; return; }
  printf '%s%.2fx' "$bound" "$(echo "$a / $b" | bc -l)"
}

# round TOOL N: one round of TOOL with N processes; prints start, change,
# replaced, remove.
round() {
  local tool=$1 n=$2 pid conf up down start change replaced remove
  case $tool in
    graft) pid=$graft_pid conf=graft_conf up=graft_apply down=graft_apply ;;
    supervisord) pid=$sup_pid conf=sup_conf up=sup_update down=sup_update ;;
    pm2) pid=$pm2_pid conf=pm2_conf up=pm2_start down=pm2_delete ;;
  esac
  before=
  $conf "$n" 0
  start=$(step "$pid" "$n" $up)
  kids "$pid" >"$work/before"
  $conf "$n" $((n / 2))
  before=$work/before change=$(step "$pid" "$n" $up)
  before=
  sleep 1 # a peer replacing more than the one in the background is counted too
  kids "$pid" >"$work/after"
  replaced=$(comm -13 "$work/before" "$work/after" | wc -l)
  [ "$tool" = pm2 ] || $conf 0 0
  remove=$(step "$pid" 0 $down)
  echo "$start $change $replaced $remove"
}

tools=(graft supervisord pm2)
printf 'supervisord %s, pm2 %s, node %s; medians of %d rounds, in ms\n' \
  "$(supervisord --version)" "$(p2 --version)" "$(node --version)" "$rounds"
for n in "${sizes[@]}"; do
  declare -A res=()
  for r in $(seq "$rounds"); do
    for tool in "${tools[@]}"; do
      read -r a b c d < <(round "$tool" "$n")
      res[$tool.start]+=" $a" res[$tool.change]+=" $b" res[$tool.replaced]+=" $c" res[$tool.remove]+=" $d"
      echo "N=$n round $r $tool: start $a, change $b (replaced $c), remove $d" >&2
      [ -n "$(kids "$(pid_of "$tool")")" ] && fresh "$tool"
    done
  done
  printf '\nN = %d\n%-18s %12s %12s %10s %12s\n' "$n" "" "start all" "change one" "replaced" "remove all"
  for tool in "${tools[@]}"; do
    # shellcheck disable=SC2086 # word splitting of the collected figures is wanted
    printf '%-18s %9s ms %9s ms %10s %9s ms\n' "$tool" \
      "$(median ${res[$tool.start]})" "$(median ${res[$tool.change]})" \
      "$(median ${res[$tool.replaced]})" "$(median ${res[$tool.remove]})"
  done
  # Each peer's time over graft's, measured in the same run.
  for tool in "${tools[@]:1}"; do
    # shellcheck disable=SC2086 # word splitting of the collected figures is wanted
    printf '%-18s %12s %12s %10s %12s\n' "$tool/graft" \
      "$(ratio "$(median ${res[$tool.start]})" "$(median ${res[graft.start]})")" \
      "$(ratio "$(median ${res[$tool.change]})" "$(median ${res[graft.change]})")" "" \
      "$(ratio "$(median ${res[$tool.remove]})" "$(median ${res[graft.remove]})")"
  done
  unset res
done
