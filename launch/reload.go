package launch

// Reload is how a running plugin takes a new config without a restart
// (docs/semantics.md, "Reloads"): a signal to its main process, or a
// command run beside it, after an optional check of the new config. The
// same fields serve plugins.yaml (its yaml tags) and the runner's wire.
type Reload struct {
	// Signal goes to the main process alone.
	Signal string `json:"signal,omitempty" yaml:"signal"`
	// Command is run as the plugin runs (its user, dir and environment)
	// and must exit 0: `caddy reload`, say. Exactly one of Signal and
	// Command is given.
	Command []string `json:"command,omitempty" yaml:"command"`
	// Check runs first, as Command does; when it fails nothing is
	// signalled and the reload fails with its output: `nginx -t`.
	Check []string `json:"check,omitempty" yaml:"check"`
}

// DefaultReloadSignal is the reload of a plugin that reloads with no
// signal or command of its own.
const DefaultReloadSignal = "SIGHUP"

// reload checks r: a known signal or a command, not both, and commands
// an exec call can run.
func (c *checker) reload(r *Reload) {
	sig, cmd := c.is("reload.signal", r.Signal != ""), c.is("reload.command", len(r.Command) > 0)
	switch {
	case sig && cmd:
		c.add("reload", "give signal or command, not both")
	case !sig && !cmd:
		c.add("reload", "want signal (such as SIGHUP) or command (such as [caddy, reload])")
	case sig:
		if pr := SignalProblem("reload.signal", r.Signal); pr != nil {
			c.out = append(c.out, pr)
		}
	case len(r.Command) == 0:
		c.add("reload.command", "want a command, such as [caddy, reload]")
	}
	c.argv("reload.command", r.Command)
	if c.is("reload.check", len(r.Check) > 0) && len(r.Check) == 0 {
		c.add("reload.check", "want a command, such as [nginx, -t]")
	}
	c.argv("reload.check", r.Check)
}
