package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/graftland/graft/hostapi"
	"github.com/graftland/graft/internal/termtext"
)

// watch prints the host's status as the host reports its changes
// (hostapi.Client.WatchStatus), until ctx ends (Ctrl-C): on a terminal
// the table redrawn in place; on a pipe a line for each plugin that
// changed, or with --json the whole status, one document a line.
func (c *StatusCmd) watch(ctx context.Context, g *Globals, cl *hostapi.Client) error {
	var on func(*hostapi.Status) error
	switch {
	case c.JSON:
		on = func(st *hostapi.Status) error {
			b, err := json.Marshal(st)
			if err != nil {
				return err
			}
			_, err = g.stdout.Write(append(termtext.JSON(b), '\n'))
			return err
		}
	case terminal(g.stdout):
		v := &statusView{w: g.stdout}
		defer v.run(ctx)()
		on = v.draw
	default:
		var prev *hostapi.Status
		on = func(st *hostapi.Status) error {
			_, err := io.WriteString(g.stdout, strings.Join(changeLines(prev, st, time.Now()), ""))
			prev = st
			return err
		}
	}
	return cl.WatchStatus(ctx, on)
}

// statusView is the status table on a terminal, redrawn whole at each
// change, and each second for its uptimes, which only the local clock
// changes.
type statusView struct {
	w    io.Writer
	mu   sync.Mutex
	last *hostapi.Status
}

// clearScreen moves to the top left corner and clears the screen.
const clearScreen = "\x1b[H\x1b[2J"

// draw redraws the view with st.
func (v *statusView) draw(st *hostapi.Status) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.last = st
	var b bytes.Buffer
	b.WriteString(clearScreen)
	if err := writeStatus(&b, st); err != nil {
		return err
	}
	fmt.Fprintf(&b, "\nWatching the host at %s. Ctrl-C to stop.\n", time.Now().Format("15:04:05"))
	_, err := v.w.Write(b.Bytes())
	return err
}

// run redraws the last status each second until ctx ends or the
// returned stop is called, which waits for the redraws to end.
func (v *statusView) run(ctx context.Context) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				v.mu.Lock()
				st := v.last
				v.mu.Unlock()
				if st != nil {
					v.draw(st)
				}
			}
		}
	}()
	return func() { cancel(); <-done }
}

// changeLines says what changed from prev to st, a line each: an apply
// that began, each plugin that appeared or whose process, status,
// restarts, last stop or error changed, each that is gone, then an apply
// that ended. (A status may show the changes of a few milliseconds.) A
// nil prev is an empty host: every plugin is new.
func changeLines(prev, st *hostapi.Status, now time.Time) []string {
	at := now.Format("15:04:05")
	var lines []string
	was, is := applying(prev), applying(st)
	if is != "" && is != was {
		lines = append(lines, fmt.Sprintf("%s host: applying: %s\n", at, termtext.Cell(is, maxHolder)))
	}
	before := map[string]string{}
	if prev != nil {
		for _, r := range prev.Plugins {
			before[r.Name] = pluginLine(r)
		}
	}
	seen := map[string]bool{}
	for _, r := range st.Plugins {
		seen[r.Name] = true
		if l := pluginLine(r); before[r.Name] != l {
			lines = append(lines, at+" "+l+"\n")
		}
	}
	for _, name := range slices.Sorted(maps.Keys(before)) {
		if !seen[name] {
			lines = append(lines, fmt.Sprintf("%s %s: gone\n", at, cell(name)))
		}
	}
	if was != "" && is == "" {
		lines = append(lines, fmt.Sprintf("%s host: the apply ended\n", at))
	}
	return lines
}

// pluginLine is one plugin's state for a line of a watch on a pipe.
func pluginLine(r hostapi.PluginStatus) string {
	run := string(r.Run)
	if r.Role != "" {
		run += " (" + r.Role + ")"
	}
	l := fmt.Sprintf("%s: %s, %s, instance %s, generation %d, pid %d, restarts %d, last stop %s", cell(r.Name), cell(string(r.Status)), cell(run),
		cell(shortID(r.Instance)), r.Generation, r.PID, r.Restarts, cell(lastStop(r.LastStop)))
	if r.LastError != "" {
		l += ", last error: " + cell(firstLine(r.LastError))
	}
	return l
}

func applying(st *hostapi.Status) string {
	if st == nil || st.Host == nil {
		return ""
	}
	return st.Host.Applying
}
