package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hashicorp/go-multierror"
	"github.com/stretchr/testify/require"

	"github.com/graftland/graft/apply"
	"github.com/graftland/graft/hostapi"
	"github.com/graftland/graft/plan"
	"github.com/graftland/graft/runtime"
	"github.com/graftland/graft/spec"
)

var update = flag.Bool("update", false, "rewrite testdata/messages.golden")

// TestMessagesAreStable: the requests of the host's API and the messages
// of an apply's stream, with every field set, as the server makes them of
// the host's plans, events and errors, marshal to the bytes of
// testdata/messages.golden: a graft of another version reads them.
func TestMessagesAreStable(t *testing.T) {
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	src := spec.Source{File: "plugins.yaml", Dir: "/srv", YAML: "plugins: {}\n", DigestKey: "00ff", Vars: map[string]string{"A": "1"}}
	p := &plan.Plan{
		Format: plan.Format, Project: "shop",
		Changes: []plan.Change{
			{Plugin: "api", Action: plan.Replace, Reason: "changed command", Run: spec.OnRunner, Status: plan.Running, Fields: []string{"command"}, Hash: "sha256:aa"},
			{Plugin: "web", Action: plan.Restart, Reason: "api is replaced", Run: spec.Local, Status: plan.Running, Cause: []string{"web", "api"}, Hash: "sha256:bb"},
		},
		Steps: []plan.Step{
			{ID: "stop:web", Op: plan.OpStop, Plugin: "web", After: []plan.Edge{}},
			{ID: "stop:api", Op: plan.OpStop, Plugin: "api", After: plan.After("stop:web")},
			{ID: "start:api", Op: plan.OpStart, Plugin: "api", After: plan.After("stop:api")},
			{ID: "start:web", Op: plan.OpStart, Plugin: "web", After: []plan.Edge{{Step: "start:api", Until: spec.UntilHealthy}, {Step: "stop:web"}}},
		},
		Waves:   [][]string{{"stop:web"}, {"stop:api"}, {"start:api"}, {"start:web"}},
		Summary: plan.Summary{Replace: 1, Restart: 1, Reload: 1, Steps: 4, Waves: 4},
		Desired: "sha256:dd", State: "sha256:ss", KeyID: "k1", Source: &src,
	}
	forced := &runtime.CleanupError{Plugin: "web", Outcome: runtime.Killed, Causes: multierror.Append(nil,
		&runtime.LocalTerminationTimeout{Plugin: "web", Instance: "u1", Window: time.Second}, errors.New("plain"))}
	unconfirmed := &runtime.CleanupError{Plugin: "api", Outcome: runtime.Unconfirmed, Causes: multierror.Append(nil,
		&runtime.RemoteTerminationUnconfirmed{Plugin: "api", Instance: "shop.api", Generation: 4, Runner: "edge", Cause: errors.New("gone")},
		&runtime.RemoteForced{Plugin: "api", Instance: "shop.api", Generation: 4, Runner: "edge", Killed: true})}
	started := &runtime.StartError{Plugin: "api", Reason: "exited before it was ready", Exit: runtime.Exit{Code: 2, Outcome: runtime.Exited, Tail: []string{"boom"}, At: at}}
	step := p.Steps[1]
	planJSON, err := json.Marshal(p)
	require.NoError(t, err)
	event := func(e apply.Event) *hostapi.Event { ev := eventOf(e); return &ev }
	bodies := []struct {
		name string
		v    any
	}{
		{"ApplyRequest", hostapi.ApplyRequest{Source: hostapi.Source(src), Plan: planJSON, Restart: []string{"api"}, Once: true, Parallelism: 3, LockWait: 1000, Holder: "ci"}},
		{"ApplyRequest/least", hostapi.ApplyRequest{}},
		{"PlanRequest", hostapi.PlanRequest{Source: hostapi.Source(src)}},
		{"Message/plan", hostapi.Message{Type: hostapi.MsgPlan, Plan: planJSON}},
		{"Message/began", hostapi.Message{Type: hostapi.MsgEvent, Event: event(apply.Event{Step: step, Phase: apply.Began, At: at})}},
		{"Message/forced", hostapi.Message{Type: hostapi.MsgEvent, Event: event(apply.Event{Step: step, Phase: apply.Succeeded, Took: 1500 * time.Millisecond, At: at,
			Result: apply.Result{Outcome: runtime.Killed, Identity: runtime.Identity{ID: "u1", Generation: 1}, PID: 7, Cleanup: forced}})}},
		{"Message/failed", hostapi.Message{Type: hostapi.MsgEvent, Event: event(apply.Event{Step: p.Steps[2], Phase: apply.Failed, Error: started.Error(), Took: time.Second, At: at})}},
		{"Message/done", hostapi.Message{Type: hostapi.MsgDone,
			Errors:   []string{"a", "b", "c", "d", "e", "f"},
			Failures: []hostapi.ErrorBody{encode(&apply.StepError{Step: step, Err: unconfirmed}), encode(started), encode(&hostapi.StaleError{Reason: "moved"}), encode(&hostapi.NothingAppliedError{}), encode(apply.ErrCancelled), encode(&plan.VerifyError{Step: "stop:x", Reason: "bad"})}}},
		{"Message/done/least", hostapi.Message{Type: hostapi.MsgDone}},
		{"LeaderInfo", hostapi.LeaderInfo{Plugin: "kv", Instance: "shop.kv", Backend: "etcd", Dir: "/d", Endpoints: []string{"http://127.0.0.1:2379"}, Key: "/graft/elect/shop.kv/",
			Holder: "h1", Address: "10.0.0.1:9", Epoch: 3, RenewCount: 9, Released: true, AgeMillis: 10, TTLMillis: 15000, Role: "leader", HostID: "h1"}},
	}
	var b bytes.Buffer
	for _, body := range bodies {
		j, err := json.Marshal(body.v)
		require.NoError(t, err, body.name)
		b.WriteString(body.name + " " + string(j) + "\n")
	}
	golden := filepath.Join("testdata", "messages.golden")
	if *update {
		require.NoError(t, os.WriteFile(golden, b.Bytes(), 0o644))
	}
	want, err := os.ReadFile(golden)
	require.NoError(t, err)
	require.Equal(t, string(want), b.String(), "the host's wire changed (go test ./hostapi -update rewrites the golden file, for a change that only adds a field)")
}
