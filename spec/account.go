package spec

import (
	"maps"
	"os"
	"slices"

	"github.com/graftland/graft/launch"
)

// here reports whether p's process runs on the machine of the host that
// loads s: a local or floating plugin's (Traits.Here), and a plugin's of
// the runner embedded in the host, which runs as the host does.
func (s *Spec) here(p *Plugin) bool {
	t := p.Run.Traits()
	if t.Here() {
		return true
	}
	if !t.Runner {
		return false
	}
	r := s.Runners[p.Runner]
	return p.Runner == "" || (r != nil && r.Address == "")
}

// account resolves the user and group of a plugin whose process runs on
// this machine (Spec.here) in this machine's user database, so that an
// unknown one is an error at its position. A remote runner plugin's are
// resolved by its runner, in the runner's database, when it starts.
func (d *decoder) account(p *Plugin, path string) {
	if d.written(path+".user") && !d.isBad(path+".user") {
		if u, _, err := launch.LookupUser(p.User); err != nil {
			d.errorf(d.at(path+".user"), path+".user", "%v", err)
		} else if u == nil && p.Group == "" {
			d.errorf(d.at(path+".user"), path+".user", "uid %s is not in the user database, so it has no group: give group too", p.User)
		}
	}
	if d.written(path+".group") && !d.isBad(path+".group") {
		if _, err := launch.LookupGroup(p.Group); err != nil {
			d.errorf(d.at(path+".group"), path+".group", "%v", err)
		}
	}
}

// permitted refuses, in a spec the host that loads it is to start, what
// this process cannot give the process of a plugin on this machine: a
// user or group not its own, when it is not root, and a limit above its
// own (launch.Ungrantable). It runs at plan time, so an apply fails
// before it stops anything.
func (d *decoder) permitted(s *Spec) {
	for _, name := range slices.Sorted(maps.Keys(s.Plugins)) {
		p, path := s.Plugins[name], join("plugins", name)
		if p == nil || !s.here(p) {
			continue
		}
		for _, pr := range launch.Ungrantable(launchLimits(p.Limits)) {
			d.problem(path, pr)
		}
		if os.Geteuid() == 0 || (p.User == "" && p.Group == "") {
			continue
		}
		l := p.Launch()
		c, err := l.Resolve()
		if err != nil {
			continue // reported by account
		}
		if why := c.Permitted(os.Geteuid(), os.Getegid()); why != "" {
			field := path + ".user"
			if p.User == "" {
				field = path + ".group"
			}
			d.errorf(d.at(field), field, "the host %s", why)
		}
	}
}
