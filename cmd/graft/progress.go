package main

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/graftland/graft/hostapi"
	"github.com/graftland/graft/internal/termtext"
	"github.com/graftland/graft/plan"
)

// progress prints an apply's stream: the plan, then a line as each step
// begins and ends. On a terminal it also keeps a live line at the bottom
// with the steps under way and their time so far.
type progress struct {
	w     io.Writer
	color bool
	live  bool

	mu      sync.Mutex
	began   time.Time
	running map[string]time.Time
	done    int
	forced  int // stops that succeeded but had to force their plugin
	failed  int
	skipped int
	total   int
	stop    chan struct{}
	wg      sync.WaitGroup
}

func newProgress(w io.Writer, color, live bool) *progress {
	p := &progress{w: w, color: color, live: live, began: time.Now(), running: map[string]time.Time{}, stop: make(chan struct{})}
	if live {
		p.wg.Add(1)
		go p.tick()
	}
	return p
}

// Close ends the live line.
func (p *progress) Close() {
	close(p.stop)
	p.wg.Wait()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clearLive()
}

func (p *progress) tick() {
	defer p.wg.Done()
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-t.C:
			p.mu.Lock()
			p.drawLive()
			p.mu.Unlock()
		}
	}
}

func (p *progress) paint(code, s string) string {
	if !p.color {
		return s
	}
	return "\x1b[" + code + "m" + s + "\x1b[0m"
}

// On handles one message of the stream.
func (p *progress) On(m hostapi.Message) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clearLive()
	switch m.Type {
	case hostapi.MsgPlan:
		pl, err := hostPlan(m.Plan)
		if err != nil {
			fmt.Fprintf(p.w, "%s\n", termtext.Line(err.Error()))
			break
		}
		p.total = len(pl.Steps)
		pl.WriteText(p.w, plan.TextOptions{Color: p.color})
		if pl.HasChanges() {
			fmt.Fprintln(p.w, "\nApplying:")
		}
	case hostapi.MsgEvent:
		p.event(*m.Event)
	}
	p.drawLive()
}

// event prints a step's progress. Everything in it comes from the host,
// perhaps over TCP, and an error may hold a plugin's last output: what a
// terminal would act on is escaped.
func (p *progress) event(e hostapi.Event) {
	op := termtext.Line(fmt.Sprintf("%-5s %s", e.Step.Op, e.Step.Plugin))
	switch e.Phase {
	case hostapi.Began:
		p.running[e.Step.ID] = time.Now()
		if !p.live {
			fmt.Fprintf(p.w, "  %s %s\n", p.paint("2", "…"), op)
		}
	case hostapi.Succeeded:
		delete(p.running, e.Step.ID)
		p.done++
		detail := ""
		if e.Step.Op == string(plan.OpStop) {
			detail = e.Result.Outcome
		} else {
			detail = fmt.Sprintf("instance %s, generation %d", e.Result.Identity.ID, e.Result.Identity.Generation)
			if e.Result.PID != 0 {
				detail += fmt.Sprintf(", pid %d", e.Result.PID)
			}
		}
		detail = termtext.Line(detail)
		if c := e.Result.Cleanup; c != nil {
			// Forced, but gone: the step succeeded; say what it took.
			p.forced++
			fmt.Fprintf(p.w, "  %s %-30s %-8s %s\n", p.paint("33", "⚠"), op, roundTook(e.Took), detail)
			for _, cause := range c.Causes {
				fmt.Fprintf(p.w, "      %s\n", termtext.Line(cause.Message))
			}
			return
		}
		fmt.Fprintf(p.w, "  %s %-30s %-8s %s\n", p.paint("32", "✓"), op, roundTook(e.Took), detail)
	case hostapi.Failed:
		delete(p.running, e.Step.ID)
		p.failed++
		fmt.Fprintf(p.w, "  %s %-30s %-8s %s\n", p.paint("31", "✗"), op, roundTook(e.Took), termtext.Line(firstLine(e.Error)))
	case hostapi.Skipped:
		p.skipped++
		fmt.Fprintf(p.w, "  %s %-30s %-8s %s\n", p.paint("33", "-"), op, "", termtext.Line(e.Error))
	}
}

// Summary prints the last line.
func (p *progress) Summary(err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clearLive()
	took := roundTook(time.Since(p.began))
	switch {
	case p.total == 0 && err == nil:
	case err == nil && p.forced > 0:
		fmt.Fprintf(p.w, "\nApply complete: %s in %s; %s had to be forced (see above).\n", count(p.done, "step", "steps"), took, count(p.forced, "stop", "stops"))
	case err == nil:
		fmt.Fprintf(p.w, "\nApply complete: %s in %s.\n", count(p.done, "step", "steps"), took)
	default:
		fmt.Fprintf(p.w, "\nApply failed after %s: %s done, %d failed, %d skipped.\n", took, count(p.done, "step", "steps"), p.failed, p.skipped)
	}
}

// drawLive writes the live line: the steps under way.
func (p *progress) drawLive() {
	if !p.live || len(p.running) == 0 {
		return
	}
	ids := make([]string, 0, len(p.running))
	for id := range p.running {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return p.running[ids[i]].Before(p.running[ids[j]]) })
	parts := make([]string, 0, len(ids))
	for _, id := range ids {
		parts = append(parts, fmt.Sprintf("%s (%s)", termtext.Line(strings.Replace(id, ":", " ", 1)), time.Since(p.running[id]).Round(100*time.Millisecond)))
	}
	fmt.Fprintf(p.w, "\r\x1b[K%s %d/%d: %s", p.paint("36", "⟳"), p.done+p.failed+p.skipped, p.total, strings.Join(parts, ", "))
}

func (p *progress) clearLive() {
	if p.live {
		fmt.Fprint(p.w, "\r\x1b[K")
	}
}

func roundTook(d time.Duration) string {
	switch {
	case d < time.Millisecond:
		return d.Round(time.Microsecond).String()
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	}
	return d.Round(10 * time.Millisecond).String()
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}
