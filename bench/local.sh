#!/usr/bin/env bash
# local.sh: graft's local placement beside supervisord and a bare Go
# fork/exec loop, in one run on one machine: start N sleeps, stop them all,
# restart one of N. Installs supervisor (Debian's 4.2.5) when it is missing.
#
#   bench/local.sh [N] [ROUNDS]        defaults 200 5
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-200} rounds=${2:-5}

if ! command -v supervisord >/dev/null; then
  echo "installing supervisor..." >&2
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq supervisor) >/dev/null
fi

work=$(mktemp -d)
cleanup() {
  if [ -f "$work/supervisord.pid" ]; then kill "$(cat "$work/supervisord.pid")" 2>/dev/null || true; fi
  sleep 0.5
  rm -rf "$work"
}
trap cleanup EXIT

# supervisord: startsecs=0 so that "started" is not held back by its
# default one-second settling time; autostart off, so each step is timed.
{
  printf '[unix_http_server]\nfile=%s/supervisor.sock\n' "$work"
  printf '[supervisord]\npidfile=%s/supervisord.pid\nlogfile=%s/supervisord.log\nnodaemon=false\nminfds=4096\n' "$work" "$work"
  printf '[rpcinterface:supervisor]\nsupervisor.rpcinterface_factory = supervisor.rpcinterface:make_main_rpcinterface\n'
  printf '[supervisorctl]\nserverurl=unix://%s/supervisor.sock\n' "$work"
  for i in $(seq "$n"); do
    printf '[program:s%d]\ncommand=sleep 3600\nautostart=false\nstartsecs=0\nstopwaitsecs=5\nstdout_logfile=NONE\nstderr_logfile=NONE\n' "$i"
  done
} >"$work/supervisord.conf"
supervisord -c "$work/supervisord.conf"
ctl() { supervisorctl -c "$work/supervisord.conf" "$@" >/dev/null; }
for _ in $(seq 50); do ctl status >/dev/null 2>&1 && break; sleep 0.1; done

# Timed through supervisord's XML-RPC interface from one Python process, so
# that supervisorctl's own start-up is not counted against supervisord.
py=$(head -1 "$(command -v supervisord)" | sed "s/^#! *//")   # the Python supervisor runs on
read -r sstart sstop srestart < <($py - "$work/supervisor.sock" "$n" "$rounds" <<'PY'
import os, statistics, sys, time, xmlrpc.client
from supervisor.xmlrpc import SupervisorTransport  # supervisorctl's own client
sock, n, rounds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
s = xmlrpc.client.ServerProxy("http://127.0.0.1", transport=SupervisorTransport(None, None, "unix://" + sock)).supervisor
sup = s.getPID()
# The effect is watched in /proc (the children of supervisord), not taken
# from the answers: with wait=True supervisord answers on its own ticks,
# which would measure its event loop rather than the processes.
def kids():
    pids = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open("/proc/%s/stat" % d) as f:
                    st = f.read()
            except OSError:
                continue
            if int(st[st.rindex(")") + 2:].split()[1]) == sup:
                pids.append(int(d))
    return pids
def until(cond):
    while not cond():
        time.sleep(0.0005)
start, stop, restart = [], [], []
name = "s%d" % (n // 2)
for _ in range(rounds):
    t0 = time.monotonic(); s.startAllProcesses(False); until(lambda: len(kids()) == n)
    t1 = time.monotonic()
    old = s.getProcessInfo(name)["pid"]
    s.stopProcess(name, False); until(lambda: old not in kids())
    s.startProcess(name, False); until(lambda: len(kids()) == n)
    t2 = time.monotonic(); s.stopAllProcesses(False); until(lambda: not kids())
    t3 = time.monotonic()
    start.append(t1 - t0); restart.append(t2 - t1); stop.append(t3 - t2)
ms = lambda xs: "%.2f" % (statistics.median(xs) * 1000)
print(ms(start), ms(stop), ms(restart))
PY
)

go build -o "$work/localbench" ./bench/localbench
"$work/localbench" -n "$n" -rounds "$rounds" | tee "$work/graft.txt"
graft_ms() { awk -v k="$1" '$0 ~ "^"k {v=$(NF-2); if (v ~ /ms$/) {sub(/ms/,"",v); print v} else if (v ~ /µs$/) {sub(/µs/,"",v); print v/1000} else {sub(/s$/,"",v); print v*1000}}' "$work/graft.txt"; }

printf '\nsupervisord %s (XML-RPC, processes watched in /proc; medians of %d rounds)\n' "$(supervisord --version)" "$rounds"
printf '%-24s %12s %10s %18s\n' "" "supervisord" "graft" "supervisord/graft"
for row in "start $n:$sstart" "stop $n:$sstop" "restart 1 of $n:$srestart"; do
  name=${row%%:*} sup=${row##*:}
  g=$(graft_ms "$name ")
  printf '%-24s %9s ms %7s ms %17.1fx\n' "$name" "$sup" "$g" "$(echo "$sup / $g" | bc -l)"
done
