package plan

import (
	"slices"
	"strings"

	"github.com/graftland/graft/spec"
)

// inPlaceField reports whether a change of field f of a running plugin is
// carried out on its supervisor alone: retry, ready and stopSignal shape
// only how graft restarts, gates and stops the process, and
// reloadSignal only how it reloads it. uses is decided by usesInPlace.
// health is not among them: its checks run beside the process, where it
// runs (on a runner, say), set up when it starts, so a change of them
// replaces it, but where the placement can change them in place
// (healthField).
//
// files, the list of the files whose content is the plugin's and what a
// change of each does, is in place too: a change of a file's content is
// its own field (spec.FileField), decided by trackingOnly and reloadField.
func inPlaceField(f string) bool {
	root, _, _ := strings.Cut(f, ".")
	switch root {
	case "retry", "ready", "stopSignal", "stopMode", "reloadSignal", "reload", "files", "update":
		return true
	}
	return false
}

// healthField reports whether f is health or one of its fields: in
// place where the placement's checks can change under a running process
// (spec.Traits.LiveHealth).
func healthField(f string) bool {
	root, _, _ := strings.Cut(f, ".")
	return root == "health"
}

// trackingOnly reports whether the change of field f, between the
// running record's fields and want, the desired ones, is one of what
// graft tracks alone: a file's digest that graft stops tracking (the file
// left files:, or became onChange: none) or starts to (a file newly
// listed, or no longer onChange: none). The process is not affected:
// a file newly tracked counts from its next change.
func trackingOnly(f string, running, want map[string]string) bool {
	if !strings.HasPrefix(f, "files[") { // spec.FileField
		return false
	}
	_, was := running[f]
	_, is := want[f]
	return !was || !is
}

// reloadField reports whether field f of p is the digest of a files entry
// whose change p reloads for. Only a placement that reloads in place
// (spec.Traits.Reload) is signalled: for others such a change replaces.
func reloadField(p *spec.Plugin, f string) bool {
	if !p.Run.Traits().Reload {
		return false
	}
	for _, e := range p.Files {
		if e.OnChange == spec.OnChangeReload && spec.FileField(e.Path) == f {
			return true
		}
	}
	return false
}

// usesInPlace reports whether the change from the running record's uses
// to p's changes nothing the process sees: uses only orders starts and
// stops, unless a provider that comes or goes is floating, whose address
// is in the consumer's environment (GRAFT_ADDR_...).
func (d *differ) usesInPlace(r *Record, p *spec.Plugin) bool {
	for _, u := range p.Uses {
		if !slices.Contains(r.Uses, u) && d.floating(u) {
			return false
		}
	}
	for _, u := range r.Uses {
		if !slices.Contains(p.Uses, u) && d.floating(u) {
			return false
		}
	}
	return true
}

// floating reports whether plugin name is, or was, elected
// (spec.Traits.Elect): its consumers have its address in their
// environment.
func (d *differ) floating(name string) bool {
	if p := d.desired.Plugins[name]; p != nil && p.Run.Traits().Elect {
		return true
	}
	r := d.running[name]
	return r != nil && r.Run.Traits().Elect
}

// changeAction decides what a change of fields of running plugin r to p
// calls for: an Update when every field is in place, a Reload when the
// rest are files that p reloads for, a Replace otherwise, whose reason
// then names the fields that force it when others would not have.
func (d *differ) changeAction(r *Record, p *spec.Plugin, fields []string) (Action, string) {
	reason := describeChange(r, p, fields)
	if len(fields) == 0 || r.Run != p.Run || r.Status == Unconfirmed {
		return Replace, reason
	}
	var forcing []string
	reload := false
	want := spec.FieldDigests(d.desired.Fields(p.Name))
	for _, f := range fields {
		switch {
		case inPlaceField(f), f == "uses" && d.usesInPlace(r, p), trackingOnly(f, r.Fields, want),
			healthField(f) && p.Run.Traits().LiveHealth:
		case reloadField(p, f):
			reload = true
		default:
			forcing = append(forcing, f)
		}
	}
	switch {
	case len(forcing) == 0 && reload:
		return Reload, reason
	case len(forcing) == 0:
		return Update, reason + " (in place)"
	case len(forcing) < len(fields):
		reason += "; forces replacement: " + strings.Join(fieldLabels(p, forcing), ", ")
	}
	return Replace, reason
}

// newlyUsed reports whether plugin i, changed in place, did not use
// provider u when it started: a provider it now uses starts before its
// update and before its next start, but does not restart it.
func (d *differ) newlyUsed(i, u int) bool {
	if !actionOf(d.changes[i].Action).inPlace() {
		return false
	}
	r := d.running[d.names[i]]
	return r != nil && !slices.Contains(r.Uses, d.names[u])
}
