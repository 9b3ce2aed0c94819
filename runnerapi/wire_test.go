package runnerapi_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/graftland/graft/launch"
	"github.com/graftland/graft/runnerapi"
)

var update = flag.Bool("update", false, "rewrite testdata/wire.golden")

// TestWireIsStable: every body of the runner's /v1 API, with every field
// set and with none, marshals to the bytes of testdata/wire.golden. Within
// /v1 fields are only ever added (docs/runner-api.md): a host and a
// runner of different versions of graft read each other's bodies.
func TestWireIsStable(t *testing.T) {
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	exit := runnerapi.Exit{Code: -1, Signal: "SIGKILL", Error: "terminated", Requested: true, Lost: true, Outcome: runnerapi.Killed, Tail: []string{"a", "b"}, At: at}
	bodies := []struct {
		name string
		v    any
	}{
		{"OpenSession", runnerapi.OpenSession{Holder: "graft host h1 (pid 7)", LeaseMillis: 15000}},
		{"Session", runnerapi.Session{Session: "s1", LeaseMillis: 15000, GraceMillis: 5000, Runner: "v1", BootID: "b"}},
		{"Renewed", runnerapi.Renewed{LeaseMillis: 15000}},
		{"Closed", runnerapi.Closed{Stopped: []runnerapi.Stopped{{Instance: "shop.api", Generation: 3, Outcome: runnerapi.Exited}}}},
		{"Closed/empty", runnerapi.Closed{}},
		{"Start", runnerapi.Start{
			Session: "s1", Plugin: "api", Project: "shop",
			Spec: launch.Spec{
				Command:    []string{"./api", "--port", "80"},
				Env:        map[string]string{"A": "1", "B": "2"},
				InheritEnv: []string{"HOME"},
				Dir:        "/srv/api",
				StopSignal: "SIGINT",
				Reload:     &launch.Reload{Signal: "SIGHUP", Check: []string{"nginx", "-t"}},
				Ready:      &launch.Ready{Log: "listening", Probe: launch.Probe{TCP: "127.0.0.1:80", HTTP: "http://127.0.0.1/", Exec: []string{"check", "-q"}, GRPC: "127.0.0.1:50051", Service: "shop.Cart"}, Timeout: launch.Duration(30 * time.Second)},
				Health: &launch.Health{Probe: launch.Probe{TCP: "127.0.0.1:80", HTTP: "http://127.0.0.1/", Exec: []string{"check"}, GRPC: "127.0.0.1:50051", Service: "shop.Cart"},
					Interval: launch.Duration(10 * time.Second), Timeout: launch.Duration(5 * time.Second), StartPeriod: launch.Duration(2 * time.Second)},
			},
		}},
		{"Start/least", runnerapi.Start{Session: "s1", Plugin: "api", Project: "shop", Spec: launch.Spec{Command: []string{"./api"},
			Ready: &launch.Ready{Log: "up"}, Health: &launch.Health{Probe: launch.Probe{TCP: "127.0.0.1:80"}}}}},
		{"Start/none", runnerapi.Start{}},
		{"Started", runnerapi.Started{Instance: "shop.api", Generation: 3, PID: 42, StartedAt: at}},
		{"Stop", runnerapi.Stop{Session: "s1", Generation: 3, ShutdownTimeoutMillis: 5000, Force: true}},
		{"Stop/least", runnerapi.Stop{Session: "s1", Generation: 3}},
		{"Reload", runnerapi.Reload{Session: "s1", Generation: 3, Spec: launch.Spec{
			Reload: &launch.Reload{Signal: "SIGHUP", Command: []string{"caddy", "reload"}, Check: []string{"nginx", "-t"}},
			Ready:  &launch.Ready{Probe: launch.Probe{TCP: "127.0.0.1:80"}, Timeout: launch.Duration(30 * time.Second)},
		}}},
		{"Reload/least", runnerapi.Reload{Session: "s1", Generation: 3, Spec: launch.Spec{Reload: &launch.Reload{Signal: "SIGHUP"}}}},
		{"Reloaded", runnerapi.Reloaded{Instance: "shop.api", Generation: 3, PID: 42}},
		{"SetHealth", runnerapi.SetHealth{Session: "s1", Generation: 3, Health: &launch.Health{Probe: launch.Probe{TCP: "127.0.0.1:80"},
			Interval: launch.Duration(10 * time.Second), Timeout: launch.Duration(5 * time.Second)}}},
		{"SetHealth/least", runnerapi.SetHealth{Session: "s1", Generation: 3}},
		{"HealthSet", runnerapi.HealthSet{Instance: "shop.api", Generation: 3}},
		{"StopResult", runnerapi.StopResult{Instance: "shop.api", Generation: 3, Outcome: runnerapi.Killed, Exit: exit}},
		{"StopResult/least", runnerapi.StopResult{Instance: "shop.api", Generation: 3, Outcome: runnerapi.Exited, Exit: runnerapi.Exit{Outcome: runnerapi.Exited, At: at}}},
		{"ErrorBody", runnerapi.ErrorBody{Error: "start failed", Kind: runnerapi.KindStartFailed, Exit: &exit, Generation: 3}},
		{"ErrorBody/least", runnerapi.ErrorBody{Error: "no session", Kind: runnerapi.KindNoSession}},
		{"Event/output", runnerapi.Event{Type: runnerapi.EventOutput, Instance: "shop.api", Generation: 3, Line: "hello"}},
		{"Event/exit", runnerapi.Event{Type: runnerapi.EventExit, Instance: "shop.api", Generation: 3, Exit: &exit}},
		{"Event/health", runnerapi.Event{Type: runnerapi.EventHealth, Instance: "shop.api", Generation: 3, Health: &runnerapi.HealthResult{OK: false, Error: "refused", At: at}}},
		{"Event/ping", runnerapi.Event{Type: runnerapi.EventPing}},
		{"Status", runnerapi.Status{Runner: "v1", PID: 9, Since: at, LeaseMillis: 15000, GraceMillis: 5000,
			Sessions:  []runnerapi.SessionStatus{{Session: "s1", Holder: "h", Expires: at}},
			Instances: []runnerapi.InstanceStatus{{Instance: "shop.api", Generation: 3, PID: 42, Session: "s1", Status: runnerapi.StatusRunning, StartedAt: at}}}},
	}
	var b bytes.Buffer
	for _, body := range bodies {
		j, err := json.Marshal(body.v)
		require.NoError(t, err, body.name)
		b.WriteString(body.name + " " + string(j) + "\n")
	}
	golden := filepath.Join("testdata", "wire.golden")
	if *update {
		require.NoError(t, os.MkdirAll("testdata", 0o755))
		require.NoError(t, os.WriteFile(golden, b.Bytes(), 0o644))
	}
	want, err := os.ReadFile(golden)
	require.NoError(t, err)
	require.Equal(t, string(want), b.String(), "the runner's wire changed: within /v1 fields are only added (go test ./runnerapi -update rewrites the golden file, for a change that adds one)")
}
