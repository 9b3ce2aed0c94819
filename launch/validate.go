package launch

import (
	"fmt"
	"maps"
	"net"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Problem is one field of a Spec that no process can be given.
type Problem struct {
	// Field is its path in the Spec, as plugins.yaml names it:
	// "command[0]", "env.PATH", "ready.tcp".
	Field string
	// Msg says what is wrong.
	Msg string
	// Key is set when what is wrong is the name of the map entry at
	// Field (an env variable's), not its value.
	Key bool
	// Value, when it must be one of Choices and is not, is the value,
	// and Suggest the choice it surely meant ("SIGTERM" for "sigterm"),
	// if any: a loader can say "did you mean".
	Value   string
	Choices []string
	Suggest string
}

func (p *Problem) Error() string { return p.Field + ": " + p.Msg }

// Problems is every problem of a Spec, field by field.
type Problems []*Problem

func (ps Problems) Error() string {
	msgs := make([]string, len(ps))
	for i, p := range ps {
		msgs[i] = p.Error()
	}
	return strings.Join(msgs, "; ")
}

// checker gathers the problems of one Problems.
type checker struct {
	given func(string) bool
	out   Problems
}

func (c *checker) add(field, format string, args ...any) *Problem {
	p := &Problem{Field: field, Msg: fmt.Sprintf(format, args...)}
	c.out = append(c.out, p)
	return p
}

// is reports whether field was given; set is whether it is not empty.
func (c *checker) is(field string, set bool) bool {
	if c.given == nil {
		return set
	}
	return c.given(field)
}

// argv checks a command line: a program name, and no NUL anywhere, which
// no exec call can pass.
func (c *checker) argv(field string, args []string) {
	for i, arg := range args {
		if i == 0 && arg == "" {
			c.add(fmt.Sprintf("%s[%d]", field, i), "empty program name")
		}
		if strings.IndexByte(arg, 0) >= 0 {
			c.add(fmt.Sprintf("%s[%d]", field, i), "contains a NUL byte")
		}
	}
}

const badEnvName = "bad environment variable name %q: it cannot be empty or hold '=' or NUL"

func validEnvName(k string) bool { return k != "" && !strings.ContainsAny(k, "=\x00") }

// env checks names an environment can hold, and no NUL in a value. The
// names are sorted, for the order of the problems, only when one has a
// problem: a spec of thousands of plugins has tens of thousands of names.
func (c *checker) env(env map[string]string) {
	bad := false
	for k, v := range env {
		bad = bad || !validEnvName(k) || strings.IndexByte(v, 0) >= 0
	}
	if !bad {
		return
	}
	for _, k := range slices.Sorted(maps.Keys(env)) {
		switch {
		case !validEnvName(k):
			c.add("env."+k, badEnvName, k).Key = true
		case strings.IndexByte(env[k], 0) >= 0:
			c.add("env."+k, "value contains a NUL byte")
		}
	}
}

// inheritEnv checks the names the process inherits: names env could set,
// each once, and none that env sets too.
func (c *checker) inheritEnv(names []string, env map[string]string) {
	seen := map[string]bool{}
	for i, k := range names {
		field := fmt.Sprintf("inheritEnv[%d]", i)
		_, inEnv := env[k]
		switch {
		case !validEnvName(k):
			c.add(field, badEnvName, k)
		case seen[k]:
			c.add(field, "%q is listed twice", k)
		case inEnv:
			c.add(field, "%q is set in env too: inherit it or set it, not both", k)
		}
		seen[k] = true
	}
}

// signal reports a signal name that is not one of Signals.
func (c *checker) signal(field, sig string) {
	p := c.add(field, "unknown signal %q; want one of %s", sig, strings.Join(Signals, ", "))
	p.Value, p.Choices = sig, Signals
	up := strings.ToUpper(sig)
	if !strings.HasPrefix(up, "SIG") {
		up = "SIG" + up
	}
	if slices.Contains(Signals, up) {
		p.Suggest = up
	}
}

func (c *checker) ready(r *Ready) {
	log := c.is("ready.log", r.Log != "")
	if log {
		if _, err := regexp.Compile(r.Log); err != nil {
			c.add("ready.log", "bad regular expression (RE2): %v", err)
		}
	}
	switch n := c.probe("ready", r.Probe); {
	case n > 1:
		c.add("ready", "want at most one of %s (log may go with any), found %d", list(Kinds()), n)
	case n == 0 && !log:
		c.add("ready", "want one of %s", list(append([]string{"log"}, Kinds()...)))
	}
	c.window("ready.timeout", r.Timeout)
}

func (c *checker) health(h *Health) {
	if n := c.probe("health", h.Probe); n != 1 {
		c.add("health", "want exactly one of %s, found %d", list(Kinds()), n)
	}
	c.window("health.interval", h.Interval)
	c.window("health.timeout", h.Timeout)
	c.window("health.startPeriod", h.StartPeriod)
}

// probe checks each kind's fields of p (kind.check), and returns how
// many kinds are given.
func (c *checker) probe(field string, p Probe) int {
	n := 0
	for _, k := range kinds {
		given := c.is(field+"."+k.name, k.set(p))
		if given {
			n++
		}
		k.check(c, field, p, given)
	}
	return n
}

// value reports msg, what is wrong with the value at field, if anything.
func (c *checker) value(field, msg string) {
	if msg != "" {
		c.add(field, "%s", msg)
	}
}

// window checks a check's window: zero is its default, and none is
// negative.
func (c *checker) window(field string, d Duration) {
	if d < 0 {
		c.add(field, "want a positive duration, or 0 for the default")
	}
}

func checkHostPort(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	n, perr := strconv.Atoi(port)
	if err != nil || host == "" || perr != nil || n < 1 || n > 65535 {
		return fmt.Sprintf("want HOST:PORT with a port from 1 to 65535, got %q", addr)
	}
	return ""
}

func checkURL(s string) string {
	if u, err := url.Parse(s); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Sprintf("want an http:// or https:// URL with a host, got %q", s)
	}
	return ""
}

// list joins names as a sentence does: "tcp, http and exec".
func list(names []string) string {
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

// SignalProblem is the problem of a signal name at field that is not one
// of Signals, or nil when it is one.
func SignalProblem(field, sig string) *Problem {
	if slices.Contains(Signals, sig) {
		return nil
	}
	var c checker
	c.signal(field, sig)
	return c.out[0]
}
