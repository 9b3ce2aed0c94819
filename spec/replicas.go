package spec

import (
	"cmp"
	"maps"
	"slices"
	"strconv"

	"github.com/graftland/graft/instance"
)

// A plugin with replicas: N is N plugins of a loaded Spec, NAME/1 …
// NAME/N (docs/semantics.md, "Replicas"). Each is a copy of the file's
// plugin with its number in GRAFT_REPLICA; a runner or floating one has
// its own instance, <instance>.<number>; they share their held sockets
// (launch.Spec.ListenKey), so the kernel spreads connections over them.
// A consumer that uses the plugin uses every replica: it starts once all
// of them are ready, and stops before the first of them stops. Nothing
// downstream of the loader knows replicas but by their names, and by Of
// and Replica where a replacement is rolled (plan) or a field's position
// is wanted (FileName).

// EnvReplica is the variable that holds a replica's number.
const EnvReplica = instance.EnvPrefix + "REPLICA"

// expandReplicas replaces each plugin that has replicas with them, and
// every use of it with uses of each of them.
func (s *Spec) expandReplicas() {
	replicas := map[string][]string{}
	for _, name := range slices.Sorted(maps.Keys(s.Plugins)) {
		p := s.Plugins[name]
		if p.Replicas == 0 {
			continue
		}
		delete(s.Plugins, name)
		content := s.content[name]
		delete(s.content, name)
		for i := 1; i <= p.Replicas; i++ {
			r := *p
			r.Name, r.Of, r.Replica, r.Replicas = ReplicaName(name, i), name, i, 0
			r.Env = maps.Clone(p.Env)
			if r.Env == nil {
				r.Env = map[string]string{}
			}
			r.Env[EnvReplica] = strconv.Itoa(i)
			if r.Instance != "" {
				r.Instance += "." + strconv.Itoa(i)
			}
			s.Plugins[r.Name] = &r
			if content != nil {
				if s.content == nil {
					s.content = map[string]map[string]string{}
				}
				s.content[r.Name] = content
			}
			replicas[name] = append(replicas[name], r.Name)
		}
	}
	if len(replicas) == 0 {
		return
	}
	for _, p := range s.Plugins {
		if !slices.ContainsFunc(p.Uses, func(u string) bool { return replicas[u] != nil }) {
			continue
		}
		var uses Uses
		until := map[string]Condition{}
		for _, u := range p.Uses {
			names := replicas[u]
			if names == nil {
				names = []string{u}
			}
			uses = append(uses, names...)
			if c, ok := p.Until[u]; ok {
				for _, n := range names {
					until[n] = c
				}
			}
		}
		p.Uses, p.Until = uses, until
	}
}

// listenKey is the key p's held sockets are kept under when p shares
// them with other replicas: the name of the file's plugin, or its
// instance for a placement with instances; empty for no replica.
func (p *Plugin) listenKey() string {
	switch {
	case p.Of == "":
		return ""
	case p.Instance != "":
		return "replicas:" + p.Instance[:len(p.Instance)-len(strconv.Itoa(p.Replica))-1]
	default:
		return "replicas:" + p.Of
	}
}

// RollingParallel is how many of p's replicas a replacement replaces at
// once.
func (p *Plugin) RollingParallel() int {
	if p.Update == nil || p.Update.Parallel < 1 {
		return 1
	}
	return p.Update.Parallel
}

// Named lists the plugins name stands for in s: itself, or the replicas
// of the file's plugin of that name, by number; none when it names none.
func (s *Spec) Named(name string) []string {
	if s.Plugins[name] != nil {
		return []string{name}
	}
	var out []*Plugin
	for _, p := range s.Plugins {
		if p.Of == name {
			out = append(out, p)
		}
	}
	slices.SortFunc(out, func(a, b *Plugin) int { return a.Replica - b.Replica })
	names := make([]string, len(out))
	for i, p := range out {
		names[i] = p.Name
	}
	return names
}

// SocketKey is the key p's held sockets are kept under where they are
// held: shared with its replicas, else its instance's (a runner's), else
// its own name's.
func (p *Plugin) SocketKey() string { return cmp.Or(p.listenKey(), p.Instance, p.Name) }
