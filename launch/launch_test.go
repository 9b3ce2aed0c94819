package launch

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// messages lists the problems of s as "field: message".
func messages(ps Problems) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.Error())
	}
	return out
}

func TestValidate(t *testing.T) {
	good := Spec{Command: []string{"./api"}, Env: map[string]string{"A": "1"}, InheritEnv: []string{"HOME"},
		StopSignal: "SIGINT", Ready: &Ready{Log: "up", Probe: Probe{TCP: "127.0.0.1:80"}},
		Health: &Health{Probe: Probe{HTTP: "http://127.0.0.1/"}, Interval: Duration(time.Second)}}
	require.NoError(t, good.Validate())
	require.NoError(t, (&Spec{}).Validate(), "nothing set is nothing wrong: a worker's process has no command")

	for _, c := range []struct {
		name string
		s    Spec
		want []string
	}{
		{"program", Spec{Command: []string{"", "a\x00b"}}, []string{"command[0]: empty program name", "command[1]: contains a NUL byte"}},
		{"env", Spec{Env: map[string]string{"A=B": "1", "C": "x\x00"}}, []string{
			`env.A=B: bad environment variable name "A=B": it cannot be empty or hold '=' or NUL`, "env.C: value contains a NUL byte"}},
		{"inheritEnv", Spec{Env: map[string]string{"A": "1"}, InheritEnv: []string{"B", "B", "A", ""}}, []string{
			`inheritEnv[1]: "B" is listed twice`, `inheritEnv[2]: "A" is set in env too: inherit it or set it, not both`,
			`inheritEnv[3]: bad environment variable name "": it cannot be empty or hold '=' or NUL`}},
		{"signal", Spec{StopSignal: "sigterm"}, []string{`stopSignal: unknown signal "sigterm"; want one of SIGHUP, SIGINT, SIGQUIT, SIGABRT, SIGKILL, SIGUSR1, SIGUSR2, SIGTERM, SIGWINCH`}},
		{"ready none", Spec{Ready: &Ready{}}, []string{"ready: want one of log, tcp, http, exec and grpc"}},
		{"ready two", Spec{Ready: &Ready{Probe: Probe{TCP: "a:1", HTTP: "http://a/"}}}, []string{"ready: want at most one of tcp, http, exec and grpc (log may go with any), found 2"}},
		{"ready values", Spec{Ready: &Ready{Log: "(", Probe: Probe{Exec: []string{""}}, Timeout: -1}}, []string{
			"ready.log: bad regular expression (RE2): error parsing regexp: missing closing ): `(`",
			"ready.exec[0]: empty program name", "ready.timeout: want a positive duration, or 0 for the default"}},
		{"health", Spec{Health: &Health{Probe: Probe{TCP: "nope"}, Interval: -1}}, []string{
			`health.tcp: want HOST:PORT with a port from 1 to 65535, got "nope"`, "health.interval: want a positive duration, or 0 for the default"}},
		{"health none", Spec{Health: &Health{}}, []string{"health: want exactly one of tcp, http, exec and grpc, found 0"}},
		{"health url", Spec{Health: &Health{Probe: Probe{HTTP: "ftp://x/"}}}, []string{`health.http: want an http:// or https:// URL with a host, got "ftp://x/"`}},
		{"grpc", Spec{Ready: &Ready{Probe: Probe{GRPC: "127.0.0.1:2379"}}, Health: &Health{Probe: Probe{GRPC: "127.0.0.1:2379", Service: "x"}}}, nil},
		{"grpc address", Spec{Health: &Health{Probe: Probe{GRPC: "nope", Service: "x"}}}, []string{`health.grpc: want HOST:PORT with a port from 1 to 65535, got "nope"`}},
		{"grpc and tcp", Spec{Ready: &Ready{Probe: Probe{TCP: "a:1", GRPC: "b:2"}}}, []string{"ready: want at most one of tcp, http, exec and grpc (log may go with any), found 2"}},
		{"service alone", Spec{Health: &Health{Probe: Probe{Service: "x"}}}, []string{
			"health.service: only with grpc, which this check does not have", "health: want exactly one of tcp, http, exec and grpc, found 0"}},
		{"service without grpc", Spec{Ready: &Ready{Log: "up", Probe: Probe{TCP: "a:1", Service: "x"}}}, []string{"ready.service: only with grpc, which this check does not have"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			ps := c.s.Problems(nil)
			assert.Equal(t, c.want, messages(ps))
			if len(c.want) > 0 {
				assert.EqualError(t, c.s.Validate(), ps.Error())
			}
		})
	}
}

// TestCheckGiven: a field that was written empty, which a YAML file can
// do, is wrong rather than absent.
func TestCheckGiven(t *testing.T) {
	written := map[string]bool{"ready.tcp": true, "ready.http": true, "health.exec": true, "stopSignal": true}
	s := Spec{Ready: &Ready{Probe: Probe{HTTP: "http://a/"}}, Health: &Health{}}
	assert.Equal(t, []string{
		`stopSignal: unknown signal ""; want one of SIGHUP, SIGINT, SIGQUIT, SIGABRT, SIGKILL, SIGUSR1, SIGUSR2, SIGTERM, SIGWINCH`,
		`ready.tcp: want HOST:PORT with a port from 1 to 65535, got ""`,
		"ready: want at most one of tcp, http, exec and grpc (log may go with any), found 2",
		"health.exec: want a command, such as [pg_isready, -q]",
	}, messages(s.Problems(func(f string) bool { return written[f] })))
}

// TestCheckGivenService: service written empty asks after a gRPC
// server as a whole, with grpc; without grpc it is refused all the same.
func TestCheckGivenService(t *testing.T) {
	written := map[string]bool{"ready.grpc": true, "ready.service": true, "health.tcp": true, "health.service": true}
	s := Spec{Ready: &Ready{Probe: Probe{GRPC: "a:1"}}, Health: &Health{Probe: Probe{TCP: "a:1"}}}
	assert.Equal(t, []string{"health.service: only with grpc, which this check does not have"},
		messages(s.Problems(func(f string) bool { return written[f] })))
}

func TestSignalProblem(t *testing.T) {
	assert.Nil(t, SignalProblem("reloadSignal", "SIGHUP"))
	p := SignalProblem("reloadSignal", "hup")
	require.NotNil(t, p)
	assert.Equal(t, "SIGHUP", p.Suggest)
	assert.Equal(t, "hup", p.Value)
	assert.Equal(t, Signals, p.Choices)
	assert.Empty(t, SignalProblem("reloadSignal", "SIGNOPE").Suggest)
}

func TestWithDefaults(t *testing.T) {
	s := Spec{Ready: &Ready{Log: "up"}, Health: &Health{Probe: Probe{TCP: "a:1"}, Interval: Duration(time.Second)}}
	d := s.WithDefaults()
	assert.Equal(t, DefaultStopSignal, d.StopSignal)
	assert.Equal(t, Duration(DefaultReadyTimeout), d.Ready.Timeout)
	assert.Equal(t, Duration(time.Second), d.Health.Interval, "a window that is set stays")
	assert.Equal(t, Duration(DefaultHealthTimeout), d.Health.Timeout)
	assert.Zero(t, s.Ready.Timeout, "s itself is not changed")
	assert.Zero(t, s.Health.Timeout)
}

func TestDuration(t *testing.T) {
	b, err := json.Marshal(Health{Interval: Duration(1500 * time.Millisecond), Timeout: Duration(5 * time.Second)})
	require.NoError(t, err)
	assert.JSONEq(t, `{"intervalMillis":1500,"timeoutMillis":5000}`, string(b))
	var h Health
	require.NoError(t, json.Unmarshal([]byte(`{"intervalMillis":250,"timeoutMillis":0}`), &h))
	assert.Equal(t, Duration(250*time.Millisecond), h.Interval)
	assert.Error(t, json.Unmarshal([]byte(`{"intervalMillis":9223372036854775807}`), &h), "too large for a time.Duration")
	assert.Error(t, json.Unmarshal([]byte(`{"intervalMillis":1.5}`), &h))

	for d, want := range map[time.Duration]string{
		0: "0 seconds", time.Second: "1 second", 30 * time.Second: "30 seconds", 90 * time.Second: "90 seconds",
		time.Hour: "1 hour", 1500 * time.Millisecond: "1500 millis", 3 * time.Microsecond: "3 micros", 7 * 24 * time.Hour: "1 week",
	} {
		assert.Equal(t, want, Duration(d).String())
	}
}

func TestKinds(t *testing.T) {
	assert.Equal(t, []string{"tcp", "http", "exec", "grpc"}, Kinds())
	assert.Equal(t, "http", Probe{HTTP: "http://a/"}.Kind())
	assert.Equal(t, "grpc", Probe{GRPC: "a:1", Service: "x"}.Kind())
	assert.Equal(t, "", Probe{Service: "x"}.Kind(), "service is an option of grpc, not a kind")
	assert.Equal(t, "", Probe{}.Kind())
}
