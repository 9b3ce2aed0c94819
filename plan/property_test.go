package plan

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/graftland/graft/spec"
)

// TestPlanProperties runs Diff on random specs against random running
// states and carries each plan out in a simulator, in a random order that
// respects the graph. It checks that every consumer stops before what it
// uses, every provider is up before its consumers start, nothing kept is
// touched, a plugin's stop precedes its own start, and the end state is
// exactly the desired one.
func TestPlanProperties(t *testing.T) {
	seen := map[Action]int{}
	for seed := range uint64(500) {
		rng := rand.New(rand.NewPCG(seed, seed*7919))
		desired := randomSpec(t, rng)
		running := randomState(rng, desired)
		p, err := Diff(desired, running)
		require.NoError(t, err, "seed %d", seed)
		simulate(t, seed, rng, desired, running, p)
		for _, c := range p.Changes {
			seen[c.Action]++
		}
	}
	for _, a := range Actions {
		require.Greater(t, seen[a], 100, "the random states exercise %s", a)
	}
}

// randomSpec builds an acyclic spec: plugin i may use only plugins with a
// smaller index, and names are shuffled so that index and name order differ.
func randomSpec(t *testing.T, rng *rand.Rand) *spec.Spec {
	names := rng.Perm(14)
	n := rng.IntN(12)
	var b strings.Builder
	b.WriteString("name: prop\nplugins:\n")
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "conf"), []byte("x"), 0o644))
	if n == 0 {
		b.WriteString("  {}\n")
	}
	for i := range n {
		fmt.Fprintf(&b, "  p%d:\n    command: [./bin/p%d, --v%d]\n    retry: {attempts: %d}\n", names[i], names[i], rng.IntN(2), 1+rng.IntN(2))
		if rng.IntN(3) != 0 {
			b.WriteString("    files: [{path: conf, onChange: reload}]\n    reloadSignal: SIGHUP\n")
		}
		var uses []string
		for j := range i {
			if rng.IntN(3) == 0 {
				uses = append(uses, fmt.Sprintf("p%d", names[j]))
			}
		}
		if len(uses) > 0 {
			fmt.Fprintf(&b, "    uses: [%s]\n", strings.Join(uses, ", "))
		}
	}
	s, err := spec.Parse(filepath.Join(dir, "plugins.yaml"), []byte(b.String()))
	require.NoError(t, err, b.String())
	return s
}

// randomState is some of the desired plugins, each as desired or with an
// older spec, plus plugins no longer desired, with acyclic uses among the
// running ones and random statuses.
func randomState(rng *rand.Rand, desired *spec.Spec) *State {
	st := &State{}
	var order []string // running plugins, providers first
	d := newDiffer(desired, &State{})
	for _, i := range d.topological() {
		name := d.names[i]
		if rng.IntN(4) == 0 {
			continue
		}
		r := Applied(desired, name)
		switch rng.IntN(8) {
		case 0, 1:
			r.Hash = "sha256:old"
			r.Fields = nil
		case 2, 3, 4, 5: // changed in place: retry, and perhaps a file it reloads for
			r.Hash = "sha256:old"
			r.Fields["retry.attempts"] = "old"
			if rng.IntN(2) == 0 {
				r.Fields[spec.FileField("conf")] = "old"
			}
		}
		st.Plugins = append(st.Plugins, r)
		order = append(order, name)
	}
	for i := range rng.IntN(5) {
		r := Record{Name: fmt.Sprintf("gone%d", i), Run: spec.Local, Hash: "sha256:gone"}
		for _, u := range order {
			if rng.IntN(3) == 0 {
				r.Uses = append(r.Uses, u)
			}
		}
		st.Plugins = append(st.Plugins, r)
		order = append(order, r.Name)
	}
	// Running uses may differ from desired ones: some desired plugins
	// whose spec is old also used other running plugins before them.
	for i := range st.Plugins {
		r := &st.Plugins[i]
		if r.Hash == "sha256:old" {
			at := slices.Index(order, r.Name)
			for _, u := range order[:at] {
				if rng.IntN(4) == 0 && !slices.Contains(r.Uses, u) {
					r.Uses = append(r.Uses, u)
				}
			}
		}
		r.Status = []Status{Running, Running, Running, Failed, Unconfirmed, Starting, Standby}[rng.IntN(7)]
	}
	return st
}

func simulate(t *testing.T, seed uint64, rng *rand.Rand, desired *spec.Spec, running *State, p *Plan) {
	t.Helper()
	// live: plugin → hash of what runs; a failed plugin has no process.
	live := map[string]string{}
	uses := map[string][]string{}
	for _, r := range running.Plugins {
		if r.Status != Failed {
			live[r.Name] = r.Hash
		}
		uses[r.Name] = r.Uses
	}
	action := map[string]Action{}
	for _, c := range p.Changes {
		action[c.Plugin] = c.Action
	}
	done := map[string]bool{}
	pending := slices.Clone(p.Steps)
	for len(pending) > 0 {
		var ready []int
		for i, s := range pending {
			if !slices.ContainsFunc(s.After, func(a Edge) bool { return !done[a.Step] }) {
				ready = append(ready, i)
			}
		}
		require.NotEmpty(t, ready, "seed %d: steps wait on each other", seed)
		i := ready[rng.IntN(len(ready))]
		s := pending[i]
		pending = slices.Delete(pending, i, i+1)
		switch s.Op {
		case OpStop:
			for c, us := range uses {
				if _, up := live[c]; up && slices.Contains(us, s.Plugin) {
					require.Failf(t, "consumer still up", "seed %d: %s stops while its consumer %s (%s) runs", seed, s.Plugin, c, action[c])
				}
			}
			delete(live, s.Plugin)
		case OpStart:
			_, up := live[s.Plugin]
			require.False(t, up, "seed %d: %s starts while its old process runs", seed, s.Plugin)
			for _, u := range desired.Plugins[s.Plugin].Uses {
				require.Equal(t, desired.Hash(u), live[u], "seed %d: %s starts before its provider %s", seed, s.Plugin, u)
			}
			live[s.Plugin] = desired.Hash(s.Plugin)
			uses[s.Plugin] = desired.Plugins[s.Plugin].Uses
		case OpReload, OpUpdate:
			_, up := live[s.Plugin]
			require.True(t, up, "seed %d: %s changes in place, but nothing runs", seed, s.Plugin)
			live[s.Plugin] = desired.Hash(s.Plugin)
			uses[s.Plugin] = desired.Plugins[s.Plugin].Uses
		}
		done[s.ID] = true
	}
	want := map[string]string{}
	for name := range desired.Plugins {
		want[name] = desired.Hash(name)
	}
	require.Equal(t, want, live, "seed %d: the plan ends where the spec says", seed)
}
