package launch

// Probe is one attempt at a plugin's service: exactly one of its kinds
// (Kinds) is set. A ready check and a health check share it: ready
// retries it until it passes, health runs it every interval.
type Probe struct {
	// TCP is HOST:PORT that must accept a connection.
	TCP string `json:"tcp,omitempty" yaml:"tcp"`
	// HTTP is a URL that must answer GET with a 2xx or 3xx status.
	HTTP string `json:"http,omitempty" yaml:"http"`
	// Exec is a command that must exit 0, run as the plugin runs.
	Exec []string `json:"exec,omitempty" yaml:"exec"`
	// GRPC is HOST:PORT of a server whose standard health service
	// (grpc.health.v1) must answer SERVING, spoken in plain text.
	GRPC string `json:"grpc,omitempty" yaml:"grpc"`
	// Service is the service a GRPC check asks after; "" asks after the
	// server as a whole. It goes with GRPC alone, and is no kind.
	Service string `json:"service,omitempty" yaml:"service"`
}

// Ready is a readiness check: at most one probe, with or without Log,
// and at least one of the two.
type Ready struct {
	// Log is an RE2 regular expression: ready once a line of the
	// plugin's output matches.
	Log string `json:"log,omitempty"`
	Probe
	// Timeout bounds the wait for readiness (DefaultReadyTimeout).
	Timeout Duration `json:"timeoutMillis,omitempty"`
}

// Health is a liveness check: exactly one probe, tried every Interval
// once StartPeriod has passed (docs/semantics.md, "Health checks").
type Health struct {
	Probe
	// Interval is the time between the starts of two checks
	// (DefaultHealthInterval).
	Interval Duration `json:"intervalMillis"`
	// Timeout bounds one check (DefaultHealthTimeout).
	Timeout Duration `json:"timeoutMillis"`
	// StartPeriod is how long after the start no check runs.
	StartPeriod Duration `json:"startPeriodMillis,omitempty"`
}

// kind is one kind of probe: its field's name, whether a probe sets it,
// and the check of its fields in the probe at field, given or not (its
// value, when given; fields of its own written without it).
type kind struct {
	name  string
	set   func(Probe) bool
	check func(c *checker, field string, p Probe, given bool)
}

// kinds are the kinds of probe, in the order messages list them. A new
// kind is a field of Probe, a line here, and its attempt in
// internal/ready (docs/architecture.md, "Where a change goes").
var kinds = []kind{
	{"tcp", func(p Probe) bool { return p.TCP != "" }, func(c *checker, field string, p Probe, given bool) {
		if given {
			c.value(field+".tcp", checkHostPort(p.TCP))
		}
	}},
	{"http", func(p Probe) bool { return p.HTTP != "" }, func(c *checker, field string, p Probe, given bool) {
		if given {
			c.value(field+".http", checkURL(p.HTTP))
		}
	}},
	{"exec", func(p Probe) bool { return len(p.Exec) > 0 }, func(c *checker, field string, p Probe, given bool) {
		if !given {
			return
		}
		if len(p.Exec) == 0 {
			c.add(field+".exec", "want a command, such as [pg_isready, -q]")
		}
		c.argv(field+".exec", p.Exec)
	}},
	{"grpc", func(p Probe) bool { return p.GRPC != "" }, func(c *checker, field string, p Probe, given bool) {
		switch {
		case given:
			c.value(field+".grpc", checkHostPort(p.GRPC))
		case c.is(field+".service", p.Service != ""):
			c.add(field+".service", "only with grpc, which this check does not have")
		}
	}},
}

// Kinds names the kinds of probe, in the order messages list them.
func Kinds() []string {
	out := make([]string, len(kinds))
	for i, k := range kinds {
		out[i] = k.name
	}
	return out
}

// Kind names the kind of probe p is, the first set of Kinds, or "" when
// it sets none.
func (p Probe) Kind() string {
	for _, k := range kinds {
		if k.set(p) {
			return k.name
		}
	}
	return ""
}
