package testsupport

import (
	"fmt"
	"os"

	"github.com/graftland/graft/spec"
)

// PlayRole is the test binary run again in a role, as go-plugin's helper
// processes are: where the environment variable env names a role, it
// plays it and exits; where env is unset or empty it returns at once, and
// the tests run. The players are tried in turn (runtimetest.Play first
// where a package's plugins play its roles too): each acts as the role
// and returns true, or returns false for a role it does not know.
// PlayRole exits 0 after a role that returned, and 2, saying so, after
// one that no player knows.
func PlayRole(env string, players ...func(role string, args []string) bool) {
	role := os.Getenv(env)
	if role == "" {
		return
	}
	for _, play := range players {
		if play(role, os.Args[1:]) {
			os.Exit(0)
		}
	}
	fmt.Fprintf(os.Stderr, "unknown role %q\n", role)
	os.Exit(2)
}

// RolePlugin is a plugin named name, of placement run, whose command is
// the test binary run again with args, to play role (env names it: see
// PlayRole). It stops at SIGTERM. Under -race a program sleeps a second
// at exit unless told not to, which would look like a slow stop: GORACE
// tells it not to.
func RolePlugin(run spec.Placement, name, env, role string, args ...string) *spec.Plugin {
	return &spec.Plugin{
		Name:       name,
		Run:        run,
		Command:    append([]string{os.Args[0]}, args...),
		Env:        map[string]string{env: role, "GORACE": "atexit_sleep_ms=0"},
		StopSignal: "SIGTERM",
	}
}
