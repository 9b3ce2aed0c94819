//go:build linux

package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graftland/graft/hostapi"
	"github.com/graftland/graft/plan"
	"github.com/graftland/graft/runtime"
)

// raw matches what a terminal acts on: C0 (but newlines), DEL, C1 and the
// bidirectional controls.
var raw = regexp.MustCompile("[\x00-\x09\x0b-\x1f\x7f\u0080-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")

const title = "\x1b]0;pwned\x07"

// TestStatusEscaped: a status from a host over TCP can hold anything in
// its names, holder and errors; the table shows them escaped, each cell
// cut to 80 runes.
func TestStatusEscaped(t *testing.T) {
	st := &hostapi.Status{
		Host: &hostapi.HostInfo{PID: 7, StateDir: "/srv/\u202e.graft", Applying: "evil\r\x1b[2K" + strings.Repeat("x", 300), Since: time.Now()},
		Plugins: []hostapi.PluginStatus{{
			Name: "web" + title, Run: "local\x1b[31m", Status: string(plan.Failed),
			LastError: "start web: " + title + strings.Repeat("e", 100) + "\nlast output:\n  more",
			Instance:  "i\x9b",
			LastStop:  &hostapi.LastStop{Outcome: "Killed", Causes: []hostapi.StopCause{{Kind: "\x1b[2J"}}},
		}},
	}
	var b bytes.Buffer
	require.NoError(t, writeStatus(&b, st))
	out := b.String()
	assert.False(t, raw.MatchString(out), "%q", out)
	assert.Contains(t, out, `state dir /srv/\u202e.graft; applying: evil\r\x1b[2K`)
	assert.Contains(t, out, `web\x1b]0;pwned\a`)
	assert.Contains(t, out, `local\x1b[31m`)
	assert.Contains(t, out, `Killed (\x1b[2J)`)
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "Host:") {
			assert.LessOrEqual(t, len([]rune(line)), 300, "the holder is cut")
		}
	}
	last := regexp.MustCompile(`start web: \\x1b\]0;pwned\\ae+…`).FindString(out)
	require.NotEmpty(t, last, out)
	assert.Equal(t, 80, len([]rune(last)), "a cell is cut at 80 runes, with an ellipsis")

	b.Reset()
	require.NoError(t, writeJSON(&b, st))
	assert.False(t, raw.MatchString(b.String()), "%s", b.String())
	assert.Contains(t, b.String(), `\u001b]0;pwned\u0007`)
}

// TestProgressEscaped: the lines of an apply show the host's events
// escaped, errors and forced stops' causes included.
func TestProgressEscaped(t *testing.T) {
	var b bytes.Buffer
	p := newProgress(&b, false, false)
	planJSON, err := json.Marshal(&plan.Plan{Format: plan.Format, Project: "shop" + title, Changes: []plan.Change{
		{Plugin: "web" + title, Action: plan.Start, Reason: "failed: " + title, Run: "local"},
	}, Steps: []plan.Step{{ID: "start:web" + title, Op: plan.OpStart, Plugin: "web" + title}}, Waves: [][]string{{"start:web" + title}},
		Summary: plan.Summary{Start: 1, Steps: 1, Waves: 1}})
	require.NoError(t, err)
	p.On(hostapi.Message{Type: hostapi.MsgPlan, Plan: planJSON})
	step := hostapi.Step{ID: "stop:db", Op: "stop", Plugin: "db" + title}
	p.On(hostapi.Message{Type: hostapi.MsgEvent, Event: &hostapi.Event{Step: step, Phase: hostapi.Began}})
	p.On(hostapi.Message{Type: hostapi.MsgEvent, Event: &hostapi.Event{Step: step, Phase: hostapi.Succeeded,
		Result: hostapi.Result{Outcome: string(runtime.Killed), Cleanup: &hostapi.Cleanup{Plugin: "db", Causes: []hostapi.StopCause{{Message: "cause " + title}}}}}})
	p.On(hostapi.Message{Type: hostapi.MsgEvent, Event: &hostapi.Event{Step: step, Phase: hostapi.Failed, Error: "start db: " + title + "\n  tail"}})
	p.On(hostapi.Message{Type: hostapi.MsgEvent, Event: &hostapi.Event{Step: step, Phase: hostapi.Skipped, Error: "skipped: " + title}})
	p.Close()
	out := b.String()
	assert.False(t, raw.MatchString(out), "%q", out)
	assert.Contains(t, out, `Plan for shop\x1b]0;pwned\a`)
	assert.Contains(t, out, `failed: \x1b]0;pwned\a`)
	assert.Contains(t, out, `cause \x1b]0;pwned\a`)
	assert.Contains(t, out, `stop  db\x1b]0;pwned\a`)
	assert.Contains(t, out, `skipped: \x1b]0;pwned\a`)
}

// TestReportEscaped: an error printed by graft keeps its lines, with what
// a terminal acts on escaped, its hint too.
func TestReportEscaped(t *testing.T) {
	var b bytes.Buffer
	code := report(&b, &hostapi.LockedError{Holder: "evil\r\x1b[2K", Since: time.Now()})
	assert.Equal(t, 1, code)
	assert.False(t, raw.MatchString(b.String()), "%q", b.String())
	assert.Contains(t, b.String(), `graft: another apply is under way: evil\r\x1b[2K, since `)

	b.Reset()
	report(&b, &hostapi.ApplyError{Errors: []error{errors.New("start a: " + title + "\n  last"), errors.New("b\u202e")}})
	assert.Equal(t, "graft: 2 errors:\n  start a: \\x1b]0;pwned\\a\n  last\n  b\\u202e\n", b.String())
}
