//go:build linux

package spec

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graftland/graft/internal/asnobody"
	"github.com/graftland/graft/launch"
)

// TestNonRootHostRefusesAnotherUser: a host that is not root refuses, as
// it parses the spec to plan it, a local or floating plugin's user or
// group that is not its own, and a hard limit above its own, at their
// positions, and so does a plugin of the runner embedded in it; its own
// user it accepts, and a remote runner plugin's is that runner's to judge.
func TestNonRootHostRefusesAnotherUser(t *testing.T) {
	dir := asnobody.Dir(t)
	prog := asnobody.Program(t, dir, "spec.test")
	parse := func(yaml string) string {
		t.Helper()
		file := filepath.Join(dir, "plugins.yaml")
		require.NoError(t, os.WriteFile(file, []byte(yaml), 0o644))
		cmd := asnobody.Command(prog, file)
		cmd.Env = append(os.Environ(), roleEnv+"=parse-to-start")
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", out)
		return strings.TrimSpace(string(out))
	}
	got := parse("name: shop\nplugins:\n  db:\n    command: [postgres]\n    user: root\n  web:\n    command: [web]\n    group: root\n")
	assert.Equal(t, "plugins.yaml:5:11: plugins.db.user: the host runs as uid 65534, not root: it cannot start a process as uid 0, gid 0\n"+
		"plugins.yaml:8:12: plugins.web.group: the host runs as uid 65534, not root: it cannot start a process as uid 65534, gid 0", got)
	assert.Equal(t, "<nil>", parse("name: shop\nplugins:\n  db:\n    command: [postgres]\n    user: nobody\n    group: nogroup\n"), "its own user")
	assert.Equal(t, "<nil>", parse("name: shop\nrunners:\n  r: {address: \"unix:///run/r.sock\"}\nplugins:\n  db:\n    run: runner\n    runner: r\n    command: [postgres]\n    user: root\n"),
		"a remote runner plugin's is its runner's to judge")
	for _, runner := range []string{"", "\n    runner: r"} {
		got = parse("name: shop\nrunners:\n  r: {}\nplugins:\n  db:\n    run: runner" + runner + "\n    command: [postgres]\n    user: root\n")
		assert.Regexp(t, `^plugins.yaml:\d+:11: plugins.db.user: the host runs as uid 65534, not root: it cannot start a process as uid 0, gid 0$`, got,
			"the embedded runner runs as the host does")
	}

	got = parse("name: shop\nplugins:\n  db:\n    command: [postgres]\n    limits: {core: 0, nofile: unlimited}\n")
	assert.Regexp(t, `^plugins.yaml:5:31: plugins.db.limits.nofile: hard unlimited is above this process's own hard limit \d+, which it cannot raise: it is not root$`, got)

	// As root, the same spec parses.
	_, err := ParseWith("plugins.yaml", "/", []byte("name: shop\nplugins:\n  db:\n    command: [postgres]\n    user: nobody\n"), Options{Starts: true})
	assert.NoError(t, err)
}

// TestUserByNumber: a user and group written as YAML numbers are ids,
// and part of the plugin's identity: changing one changes its hash.
func TestUserByNumber(t *testing.T) {
	load := func(user string) *Spec {
		s, err := Parse("plugins.yaml", []byte("name: shop\nplugins:\n  db:\n    command: [postgres]\n"+user))
		require.NoError(t, err)
		return s
	}
	s := load("    user: 65534\n    group: 65534\n")
	assert.Equal(t, "65534", s.Plugins["db"].User)
	assert.Equal(t, "65534", s.Plugins["db"].Launch().Group)
	assert.NotEqual(t, load("").Hash("db"), s.Hash("db"))
	assert.NotEqual(t, load("    user: nobody\n").Hash("db"), load("    user: root\n").Hash("db"))
	assert.NotEqual(t, load("").Hash("db"), load("    umask: \"007\"\n").Hash("db"))
	assert.NotEqual(t, load("    limits: {nofile: 1024}\n").Hash("db"), load("    limits: {nofile: {soft: 1024, hard: 2048}}\n").Hash("db"))
	l := load("    limits: {nofile: 1024, core: unlimited}\n").Plugins["db"].Launch()
	assert.Equal(t, map[string]launch.Limit{"nofile": {Soft: 1024, Hard: 1024}, "core": {Soft: launch.Unlimited, Hard: launch.Unlimited}}, l.Limits)
}
