//go:build linux

package fleet

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"
)

// record is a line of a plugin's records (Hold).
type record struct {
	what  string
	epoch int64
	host  string
	at    time.Time
	pid   int
}

func readRecords(dir, plugin string) []record {
	file, err := os.Open(filepath.Join(dir, plugin))
	if err != nil {
		return nil
	}
	defer file.Close()
	var recs []record
	sc := bufio.NewScanner(file)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 5 {
			continue
		}
		epoch, err1 := strconv.ParseInt(f[1], 10, 64)
		ns, err2 := strconv.ParseInt(f[3], 10, 64)
		pid, err3 := strconv.Atoi(f[4])
		if err1 != nil || err2 != nil || err3 != nil {
			continue
		}
		recs = append(recs, record{what: f[0], epoch: epoch, host: f[2], at: time.Unix(0, ns), pid: pid})
	}
	return recs
}

// leader is who held a plugin's lock at a moment, by its records.
type leader struct {
	epoch int64
	host  string
	pid   int
	// live: its process still runs, and has recorded no end.
	live bool
}

// leaders are the plugins' leaders at the moment at, by their records.
func (f *fleet) leaders(at time.Time) map[string]leader {
	ls := map[string]leader{}
	for _, p := range f.plugins() {
		var l leader
		for _, r := range readRecords(f.records(), p) {
			if r.at.After(at) {
				break
			}
			switch r.what {
			case "start":
				l = leader{epoch: r.epoch, host: r.host, pid: r.pid, live: true}
			case "end":
				if r.pid == l.pid {
					l.live = false
				}
			}
		}
		if l.live && !alive(l.pid) {
			l.live = false
		}
		ls[p] = l
	}
	return ls
}

// settle waits until every plugin has a live leader.
func (f *fleet) settle(ctx context.Context, d time.Duration) error {
	deadline := time.Now().Add(d)
	for {
		missing := f.leaderless()
		if len(missing) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no leader after %s for %s", d, strings.Join(missing, ", "))
		}
		if !sleep(ctx, 100*time.Millisecond) {
			return ctx.Err()
		}
	}
}

// leaderless are the plugins with no live leader now.
func (f *fleet) leaderless() []string {
	var missing []string
	for p, l := range f.leaders(time.Now()) {
		if !l.live {
			missing = append(missing, p)
		}
	}
	slices.Sort(missing)
	return missing
}

// violations are, by the records: a process that found its plugin's lock
// held by another, and an epoch that goes back, or comes again from
// another host (a host restarting its plugin under the term it holds
// starts it with the same epoch).
func (f *fleet) violations() []string {
	var vs []string
	for _, p := range f.plugins() {
		var last *record
		for _, r := range readRecords(f.records(), p) {
			switch r.what {
			case "violation":
				vs = append(vs, fmt.Sprintf("%s: epoch %d on %s found the lock held by another process, at %s", p, r.epoch, r.host, r.at.Format(time.StampMilli)))
			case "start":
				if last != nil {
					switch {
					case r.epoch < last.epoch:
						vs = append(vs, fmt.Sprintf("%s: epoch %d on %s after epoch %d on %s: it went back", p, r.epoch, r.host, last.epoch, last.host))
					case r.epoch == last.epoch && r.host != last.host:
						vs = append(vs, fmt.Sprintf("%s: epoch %d on %s, and again on %s", p, r.epoch, last.host, r.host))
					}
				}
				last = &r
			}
		}
	}
	return vs
}

// alive reports whether pid runs (a zombie does not).
func alive(pid int) bool {
	if pid <= 0 || syscall.Kill(pid, 0) != nil {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

// clockTicks is the kernel's USER_HZ, in which /proc counts CPU time: 100
// on every Linux that Go supports.
const clockTicks = 100

// processUsage is the CPU time pid used so far (user and system), and its
// resident memory, from /proc.
func processUsage(pid int) (cpu time.Duration, rss int64) {
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil {
		s := string(b)
		if i := strings.LastIndexByte(s, ')'); i >= 0 {
			f := strings.Fields(s[i+1:])
			// Fields 14 and 15 of stat, utime and stime: 12 and 13 after
			// the name.
			if len(f) > 12 {
				u, _ := strconv.ParseInt(f[11], 10, 64)
				st, _ := strconv.ParseInt(f[12], 10, 64)
				cpu = time.Duration(u+st) * time.Second / clockTicks
			}
		}
	}
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid)); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
				kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
				rss = kb << 10
			}
		}
	}
	return cpu, rss
}

// String is the report, as bench/fleet.sh prints it.
func (r *Report) String() string {
	var b strings.Builder
	ttl := "ttl"
	if r.Backend == Etcd {
		ttl = "session TTL"
	}
	fmt.Fprintf(&b, "%s: %d hosts, %d plugins, %s %s\n", r.Backend, r.Hosts, r.Plugins, ttl, r.TTL)
	fmt.Fprintf(&b, "violations: %d; plugins without a leader after settling: %d\n", len(r.Violations), len(r.Leaderless))
	for _, v := range r.Violations {
		fmt.Fprintf(&b, "  violation: %s\n", v)
	}
	if len(r.Leaderless) > 0 {
		fmt.Fprintf(&b, "  without a leader: %s\n", strings.Join(r.Leaderless, ", "))
	}
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	header := "fault\tfaults\tplugins lost\tfailover p50\tp99\tmax\textra epoch changes"
	if r.Backend == Etcd {
		header += "\tetcd elections"
	}
	fmt.Fprintln(tw, header)
	var kinds []Kind
	for _, f := range r.Faults {
		if !slices.Contains(kinds, f.Kind) {
			kinds = append(kinds, f.Kind)
		}
	}
	for _, k := range kinds {
		var n, lost, extra, elected int
		var fos []time.Duration
		for _, f := range r.Faults {
			if f.Kind == k {
				n++
				lost += f.Lost
				extra += f.Extra
				elected += f.Elections
				fos = append(fos, f.Failovers...)
			}
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\t%s\t%d", k, n, lost, pct(fos, 50), pct(fos, 99), pct(fos, 100), extra)
		if r.Backend == Etcd {
			fmt.Fprintf(tw, "\t%d", elected)
		}
		fmt.Fprintln(tw)
	}
	tw.Flush()
	if len(r.CPU) > 0 {
		if r.Backend == Etcd {
			fmt.Fprintf(&b, "etcd: %.1f requests/s per host; the 3 members use %.1f%% of a core; elections: %d\n", r.EtcdPerHost, 100*r.EtcdCPU, r.EtcdElections)
		}
		fmt.Fprintf(&b, "host CPU: mean %.2f%%, max %.2f%% of a core; RSS: mean %.1f MB, max %.1f MB\n",
			100*mean(r.CPU), 100*slices.Max(r.CPU), mean(toFloat(r.RSS))/(1<<20), float64(slices.Max(r.RSS))/(1<<20))
	}
	return b.String()
}

// pct is the p-th percentile of ds (the nearest rank), "-" when empty.
func pct(ds []time.Duration, p int) string {
	if len(ds) == 0 {
		return "-"
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := (len(s)*p + 99) / 100
	i = min(max(i, 1), len(s))
	return s[i-1].Round(10 * time.Millisecond).String()
}

func mean(xs []float64) float64 {
	var s float64
	for _, x := range xs {
		s += x
	}
	return s / float64(max(len(xs), 1))
}

func toFloat(xs []int64) []float64 {
	var fs []float64
	for _, x := range xs {
		fs = append(fs, float64(x))
	}
	return fs
}
