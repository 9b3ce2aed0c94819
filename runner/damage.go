package runner

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/graftland/graft/internal/proc"
)

// damage is an entry of the journal that is not whole (journal.go): what
// could be read of it, none of it trusted, and why it is damaged. Or, with
// noStart, a whole pid entry whose start entry is missing, which the
// record was made from.
type damage struct {
	entry int    // the entry's line in the journal, from 1
	why   string // damagedCut, damagedChecksum or damagedFields
	op    string // as read; maybe wrong
	rec   record // what could be read of its record; maybe wrong
	// noStart: the entry is a whole pid entry, and its start entry is
	// missing (damaged beyond reading, or lost).
	noStart bool
	// looked is set once a record carries it: its process is looked for.
	looked bool
	// line is the entry as read, without its '\n': a compaction keeps it
	// while it is an extra record's, the one place that record is named.
	line []byte
}

// The fields of an entry, found one by one in a damaged line, whose JSON
// may not parse: what encodeEntry writes, with room for a space.
var (
	opField         = regexp.MustCompile(`"op"\s*:\s*"([a-z]+)"`)
	instanceField   = regexp.MustCompile(`"instance"\s*:\s*"((?:[^"\\]|\\.)*)"`)
	generationField = regexp.MustCompile(`"generation"\s*:\s*([0-9]+)`)
	invocationField = regexp.MustCompile(`"invocation"\s*:\s*"([^"\\]+)"`)
	pidField        = regexp.MustCompile(`"pid"\s*:\s*([0-9]+)`)
	startTimeField  = regexp.MustCompile(`"startTime"\s*:\s*([0-9]+)`)
	bootIDField     = regexp.MustCompile(`"bootID"\s*:\s*"([^"\\]*)"`)
)

// salvage reads what it can of line, the damaged entry n: its JSON if it
// parses, else each field it can find whole. A field that breaks the
// rules of an entry (an instance name that is none, a negative
// generation) is left out.
func salvage(line []byte, n int, why string) *damage {
	d := &damage{entry: n, why: why, line: bytes.Clone(line)}
	b := line
	if i := bytes.IndexByte(line, '{'); i >= 0 {
		b = line[i:]
	}
	var e entry
	if json.Unmarshal(b, &e) == nil {
		d.op, d.rec = e.Op, e.record
	} else {
		d.op = string(field(opField, b))
		if v := field(instanceField, b); v != nil {
			json.Unmarshal(append(append([]byte{'"'}, v...), '"'), &d.rec.Instance)
		}
		d.rec.Generation = number[int64](field(generationField, b))
		d.rec.Invocation = text(field(invocationField, b))
		d.rec.PID = number[int](field(pidField, b))
		d.rec.StartTime = number[uint64](field(startTimeField, b))
		d.rec.BootID = text(field(bootIDField, b))
	}
	if validateName(d.rec.Instance) != nil {
		d.rec.Instance = ""
	}
	d.rec.Generation = max(d.rec.Generation, 0)
	d.rec.PID = max(d.rec.PID, 0)
	return d
}

// field is the first group of re's first match in b; nil when none.
func field(re *regexp.Regexp, b []byte) []byte {
	if m := re.FindSubmatch(b); m != nil {
		return m[1]
	}
	return nil
}

// text is b as a string, or "" when it is not UTF-8: bytes a damage
// left there are no id (and would not survive a compaction as they are).
func text(b []byte) string {
	if !utf8.Valid(b) {
		return ""
	}
	return string(b)
}

// number is b in decimal; 0 when it is none, or too large.
func number[T int | int64 | uint64](b []byte) T {
	n, err := strconv.ParseUint(string(b), 10, 63)
	if err != nil {
		return 0
	}
	return T(n)
}

// applyDamaged applies what could be read of a damaged entry, as far as it
// can only add to what is looked for: a generation read in it counts as
// handed out (a repeated one is the worse mistake), and a process whose
// invocation id is read in it is looked for, in its instance's record when
// the instance has none, else as an extra record; an end read in it ends
// nothing.
func (r *replay) applyDamaged(d *damage) {
	r.damaged = append(r.damaged, d)
	name, gen := d.rec.Instance, d.rec.Generation
	if name == "" {
		return
	}
	if d.op == opOldGen {
		r.oldLast[name] = max(r.oldLast[name], gen)
		return
	}
	r.last[name] = max(r.last[name], gen)
	if d.rec.Invocation == "" {
		return
	}
	rec := d.rec
	rec.damage, rec.salvaged = d, true
	cur, live := r.live[name]
	switch {
	case !live:
		r.live[name] = rec
	case cur.Invocation == rec.Invocation:
		if cur.damage == nil || cur.damage.noStart {
			cur.damage = d
		}
		r.live[name] = cur
	default:
		r.extra = append(r.extra, rec)
	}
}

// settle ends a replay: a record read from a damaged entry that names the
// process of another record (whose instance it read wrong, say) gives way
// to it, and that record carries the damage in its place; then each
// damage a record carries is looked.
func (r *replay) settle() {
	whole := map[string]string{} // invocation: instance, of the records from whole entries
	var salvaged []string
	for name, rec := range r.live {
		switch {
		case rec.salvaged:
			salvaged = append(salvaged, name)
		case rec.Invocation != "":
			whole[rec.Invocation] = name
		}
	}
	moveTo := func(rec record) bool {
		name, ok := whole[rec.Invocation]
		if !ok {
			return false
		}
		if to := r.live[name]; to.damage == nil || to.damage.noStart {
			to.damage = rec.damage
			r.live[name] = to
		}
		return true
	}
	for _, name := range salvaged {
		if moveTo(r.live[name]) {
			delete(r.live, name)
		}
	}
	extra := r.extra[:0]
	for _, rec := range r.extra {
		if !moveTo(rec) {
			extra = append(extra, rec)
		}
	}
	r.extra = extra
	for _, rec := range r.records() {
		if rec.damage != nil {
			rec.damage.looked = true
		}
	}
}

// records are the live records and the extra ones.
func (r *replay) records() []record {
	out := make([]record, 0, len(r.live)+len(r.kept)+len(r.extra))
	for _, rec := range r.live {
		out = append(out, rec)
	}
	for _, rec := range r.kept {
		out = append(out, rec)
	}
	return append(out, r.extra...)
}

// reportDamaged reports what recovery found and did of rec, when it was
// read from a damaged entry of the journal (or its start entry was
// missing): the processes it found (none: rec's process was gone), which
// are stopped now.
func (r *Runner) reportDamaged(rec record, found []proc.Member) {
	d := rec.damage
	if d == nil {
		return
	}
	what := fmt.Sprintf("journal entry %d of %s is damaged (%s)", d.entry, rec.Instance, d.why)
	if d.noStart {
		what = fmt.Sprintf("journal entry %d of %s, its pid entry, has no start entry before it", d.entry, rec.Instance)
	}
	pids := make([]int, len(found))
	how := "invocation id"
	for i, m := range found {
		pids[i] = m.Pid
		if rec.PID != 0 && m.Pid == rec.PID {
			how = "pid and invocation id"
		}
	}
	log := r.log.With("journal", journalPath(r.dir), "entry", d.entry, "instance", rec.Instance,
		"generation", rec.Generation, "invocation", rec.Invocation, "why", d.why)
	switch len(found) {
	case 0:
		log.Warn(what + "; no process carries its invocation id: it is gone")
	case 1:
		log.Error(fmt.Sprintf("%s; found its process %d by %s and stopped it", what, pids[0], how), "pids", pids)
	default:
		log.Error(fmt.Sprintf("%s; found its processes %s by %s and stopped them", what, joinPIDs(pids), how), "pids", pids)
	}
}

// reportUnlooked reports each damaged entry of the journal whose process
// is not looked for: none could be read in it, or its end is recorded.
func (r *Runner) reportUnlooked() {
	r.metrics.damaged.Add(float64(len(r.state.damaged)))
	for _, d := range r.state.damaged {
		if d.looked {
			continue
		}
		of := ""
		if d.rec.Instance != "" {
			of = " of " + d.rec.Instance
		}
		r.log.Error(fmt.Sprintf("journal entry %d%s is damaged (%s): it names no process that may still run", d.entry, of, d.why),
			"journal", journalPath(r.dir), "entry", d.entry, "why", d.why, "op", d.op, "generation", d.rec.Generation)
	}
}

// joinPIDs is "1, 2 and 3".
func joinPIDs(pids []int) string {
	s := make([]string, len(pids))
	for i, p := range pids {
		s[i] = strconv.Itoa(p)
	}
	if len(s) == 1 {
		return s[0]
	}
	return strings.Join(s[:len(s)-1], ", ") + " and " + s[len(s)-1]
}
