package spec

import (
	"encoding/json"
	"strconv"

	"gopkg.in/yaml.v3"
)

// Once makes a plugin a one-shot: it runs to completion (a migration, a
// cache warm-up) and is not run again while it stays completed
// (docs/semantics.md, "One-shot plugins"). It is written once: true, or
// once: {timeout: D}.
type Once struct {
	// On marks a one-shot.
	On bool `yaml:"-"`
	// Timeout bounds its run, from its start to its completion, retries
	// included (default 1 hour): past it, it is stopped and its step
	// fails. It shapes the apply's wait, not the process: it is not in
	// the plugin's Fields, and changing it replaces nothing.
	Timeout Duration `yaml:"timeout"`
}

// fromScalar reads once: true or once: false.
func (o *Once) fromScalar(n *yaml.Node) string {
	on, err := strconv.ParseBool(n.Value)
	if n.ShortTag() != "!!bool" || err != nil {
		return "want true, false or {timeout: DURATION}, got " + describe(n)
	}
	o.On = on
	return ""
}

// fromMapping makes once: {…} a one-shot.
func (o *Once) fromMapping() { o.On = true }

// MarshalJSON writes o as its Fields entry: true for a one-shot, as once:
// true was before it took a timeout, so that a plugin's hash is the same.
func (o Once) MarshalJSON() ([]byte, error) { return json.Marshal(o.On) }
