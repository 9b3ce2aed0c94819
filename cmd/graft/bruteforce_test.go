//go:build linux

package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graftland/graft/hostapi"
	"github.com/graftland/graft/plan"
	"github.com/graftland/graft/spec"
)

// The digests graft printed before they were keyed, as an attacker who
// read a CI log would compute them: each a SHA-256 of the plugin's fields
// with the env values in clear. TestOldScheme holds them to what that
// graft printed.

// oldFields is a plugin's fields with its env values in clear.
func oldFields(s *spec.Spec, name string, env map[string]string) map[string]string {
	f := s.Fields(name)
	for k, v := range env {
		b, _ := json.Marshal(v)
		f["env."+k] = string(b)
	}
	return f
}

func oldDigest(fields map[string]string) string {
	h := sha256.New()
	for _, k := range slices.Sorted(maps.Keys(fields)) {
		fmt.Fprintf(h, "%s\x00%s\n", k, fields[k])
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

func oldFieldDigest(v string) string {
	sum := sha256.Sum256([]byte(v))
	return hex.EncodeToString(sum[:8])
}

// oldDigests are the digests of spec s with plugin's env variable name set
// to value that the old graft printed and that depend on the value: the
// plugin's hash, that variable's field digest, the spec's digest (desired)
// and the digest of the state that runs s (state). s has no runners.
func oldDigests(s *spec.Spec, plugin, name, value string) []string {
	all := map[string]string{"name": mustJSON(s.Name)}
	hashes := map[string]string{}
	var out []string
	for n, p := range s.Plugins {
		env := maps.Clone(p.Env)
		if n == plugin {
			env[name] = value
			out = append(out, oldFieldDigest(mustJSON(value)))
		}
		hashes[n] = oldDigest(oldFields(s, n, env))
		all["plugins."+n] = hashes[n]
		if n == plugin {
			out = append(out, hashes[n])
		}
	}
	st := &plan.State{}
	for _, n := range slices.Sorted(maps.Keys(s.Plugins)) {
		st.Plugins = append(st.Plugins, plan.Record{Name: n, Hash: hashes[n], Status: plan.Running, Uses: s.Plugins[n].Uses})
	}
	return append(out, oldDigest(all), st.Digest())
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// TestOldScheme: oldDigests computes what graft printed before its digests
// were keyed: the hashes, desired and state of the golden plan
// replace-leaf as that graft wrote them (git history of
// plan/testdata/plan/replace-leaf/want.json).
func TestOldScheme(t *testing.T) {
	// The old graft did not digest executables: none may be found on
	// PATH (redis-server is, where it is installed).
	t.Setenv("PATH", "")
	before, err := spec.Load("../../plan/testdata/plan/replace-leaf/before.yaml")
	require.NoError(t, err)
	desired, err := spec.Load("../../plan/testdata/plan/replace-leaf/plugins.yaml")
	require.NoError(t, err)
	d := oldDigests(desired, "api", "LOG", "debug")
	assert.Contains(t, d, "sha256:b1079513ca5dca01bc5c09dd4826874845126b13d832de26613aa0eb70ba483c", "api's hash")
	assert.Contains(t, d, "sha256:85c101a5d2b31335054a936d534c486e9e82cc1f0f0b812b9bc17b1d66135ad8", "desired")
	assert.Contains(t, oldDigests(before, "api", "LOG", "info"), "sha256:ec668cc2e591c78855bbaa720123e81e107b1e6f4a679c3bb72990fd466b1d07", "state")
}

// hexRuns are the runs of hex digits in graft's outputs that may be
// digests: 16 digits (a field digest) or 64 (a hash).
var hexRuns = regexp.MustCompile(`[0-9a-f]{16,64}`)

// bruteforce SPEC PLUGIN VAR FILE... tries every 4-digit value of PLUGIN's
// env variable VAR in SPEC, as an attacker who knows the rest of the file
// would: each value's digests under the old, unkeyed scheme (oldDigests)
// are looked for in the FILEs, graft's outputs. It fails when one is found,
// naming the value; with !, when none is.
func cmdBruteforce(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) < 4 {
		ts.Fatalf("usage: bruteforce spec plugin var file...")
	}
	s, err := spec.Load(ts.MkAbs(args[0]))
	ts.Check(err)
	if len(s.Runners) > 0 || s.Plugins[args[1]] == nil {
		ts.Fatalf("%s: want a spec without runners, with plugin %s", args[0], args[1])
	}
	seen := map[string]string{} // digest → file
	for _, f := range args[3:] {
		b, err := os.ReadFile(ts.MkAbs(f))
		ts.Check(err)
		for _, run := range hexRuns.FindAllString(string(b), -1) {
			seen[run] = f
		}
	}
	began := time.Now()
	for i := range 10000 {
		value := fmt.Sprintf("%04d", i)
		for _, d := range oldDigests(s, args[1], args[2], value) {
			if f, ok := seen[strings.TrimPrefix(d, "sha256:")]; ok {
				if !neg {
					ts.Fatalf("%s=%s found in %s, by its digest %s, in %s", args[2], value, f, d, time.Since(began).Round(time.Millisecond))
				}
				ts.Logf("%s=%s found in %s, by its digest %s, in %s", args[2], value, f, d, time.Since(began).Round(time.Millisecond))
				return
			}
		}
	}
	if neg {
		ts.Fatalf("no value of %s found in %s", args[2], strings.Join(args[3:], " "))
	}
	ts.Logf("no value of %s found in %d digests of %s (%s)", args[2], len(seen), strings.Join(args[3:], " "), time.Since(began).Round(time.Millisecond))
}

// oldstatus SPEC FILE writes to FILE what graft status --json printed
// before digests were keyed, for SPEC applied: each plugin's hash and
// field digests, and the spec's digest.
func cmdOldStatus(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: oldstatus spec file")
	}
	s, err := spec.Load(ts.MkAbs(args[0]))
	ts.Check(err)
	all := map[string]string{"name": mustJSON(s.Name)}
	st := hostapi.Status{Host: &hostapi.HostInfo{}}
	for _, n := range slices.Sorted(maps.Keys(s.Plugins)) {
		f := oldFields(s, n, s.Plugins[n].Env)
		r := hostapi.PluginStatus{Name: n, Status: string(plan.Running), Hash: oldDigest(f), Fields: map[string]string{}}
		for k, v := range f {
			r.Fields[k] = oldFieldDigest(v)
		}
		all["plugins."+n] = r.Hash
		st.Plugins = append(st.Plugins, r)
	}
	st.Host.Spec = oldDigest(all)
	b, err := json.MarshalIndent(st, "", "  ")
	ts.Check(err)
	ts.Check(os.WriteFile(ts.MkAbs(args[1]), b, 0o644))
}
