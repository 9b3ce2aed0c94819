package spec

import (
	"fmt"
	"reflect"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"
)

// Uses is the list of the plugins a plugin consumes, by name. Its YAML
// entries are a name (short form, meaning "until ready") or a mapping
// {plugin: NAME, until: CONDITION}; the decoder keeps the conditions in
// Plugin.Until.
type Uses []string

// Condition is what a consumer waits for of a provider before it starts
// (docs/semantics.md, "Dependency conditions").
type Condition string

// The conditions of a uses entry, in the order a start reaches them.
const (
	UntilStarted   Condition = "started"   // the process exec'd
	UntilReady     Condition = "ready"     // its ready check passed (the default)
	UntilHealthy   Condition = "healthy"   // its first health check passed
	UntilCompleted Condition = "completed" // a one-shot exited 0
)

// Conditions lists every condition.
var Conditions = []Condition{UntilStarted, UntilReady, UntilHealthy, UntilCompleted}

// Condition returns the condition p's consumer waits for of provider:
// the one its uses entry wrote, else UntilReady.
func (p *Plugin) Condition(provider string) Condition {
	if c, ok := p.Until[provider]; ok {
		return c
	}
	return UntilReady
}

var usesType = reflect.TypeFor[Uses]()

// useItem decodes one entry of a uses list at path into name, and records
// a long-form entry's condition for usesConditions.
func (d *decoder) useItem(n *yaml.Node, name *string, path string) {
	n = resolve(n)
	if n.Kind != yaml.MappingNode {
		d.element(n, reflect.ValueOf(name).Elem(), path)
		return
	}
	entries, ok := d.entries(n, path)
	if !ok {
		return
	}
	var cond Condition
	for _, e := range entries {
		p := join(path, e.key)
		switch e.key {
		case "plugin":
			d.record(p, e)
			d.element(e.val, reflect.ValueOf(name).Elem(), p)
		case "until":
			d.record(p, e)
			var s string
			d.element(e.val, reflect.ValueOf(&s).Elem(), p)
			cond = Condition(s)
			if s != "" && !slices.Contains(Conditions, cond) {
				d.errorf(d.at(p), p, "unknown condition %q; want one of started, ready, healthy, completed%s", s, didYouMean(s, conditionNames()))
			}
		default:
			d.errorf(nodePos(e.keyNode), p, "unknown field%s", suggestion(e.key, []string{"plugin", "until"}))
		}
	}
	if _, ok := d.pos[join(path, "plugin")]; !ok {
		d.errorf(nodePos(n), path, "missing plugin: the long form is {plugin: NAME, until: CONDITION}")
	}
	if cond != "" {
		d.until[path] = cond
	}
}

// usesConditions fills p.Until from the long-form entries of the uses
// list of the plugin at path.
func (d *decoder) usesConditions(p *Plugin, path string) {
	if len(d.until) == 0 {
		return // no uses entry of the file is in the long form
	}
	for i, u := range p.Uses {
		if c, ok := d.until[fmt.Sprintf("%s.uses[%d]", path, i)]; ok {
			if p.Until == nil {
				p.Until = map[string]Condition{}
			}
			p.Until[u] = c
		}
	}
}

// validateConditions rejects a condition its provider can never reach:
// completed of a plugin that is not one-shot, healthy of one without a
// health check, and ready or healthy of a one-shot, which is not checked
// until it completes.
func (d *decoder) validateConditions(s *Spec, p *Plugin, path string) {
	for i, u := range p.Uses {
		c, ok := p.Until[u]
		prov := s.Plugins[u]
		if !ok || prov == nil {
			continue
		}
		up := fmt.Sprintf("%s.uses[%d].until", path, i)
		switch {
		case c == UntilCompleted && !prov.Once.On:
			d.errorf(d.at(up), up, "%s is not one-shot (once: true), so it never completes; wait for ready or started", u)
		case c == UntilHealthy && prov.Health == nil:
			d.errorf(d.at(up), up, "%s has no health check, so it is never healthy; give it health: or wait for ready", u)
		}
	}
}

func conditionNames() []string {
	out := make([]string, len(Conditions))
	for i, c := range Conditions {
		out[i] = string(c)
	}
	return out
}

// String lists the entries as written in short form, for messages.
func (u Uses) String() string { return strings.Join(u, ", ") }
