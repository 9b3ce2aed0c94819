package runtime

import (
	"strings"

	"github.com/graftland/graft/instance"
)

// DefaultPath is a plugin's PATH when the environment it starts from sets
// none: systemd's default for services.
const DefaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// baseVars are the variables of the starting daemon's environment that
// every process plugin gets, when set there.
var baseVars = []string{"PATH", "HOME", "LANG", "TZ"}

// BaseEnv is the environment a local, runner or floating plugin starts
// from, as KEY=VALUE, taken from parent, the environment of the daemon
// that starts it (the host's, or the runner's): PATH (DefaultPath when
// parent has none), HOME, LANG and TZ when set, and graft's own GRAFT_
// variables. Nothing else of parent reaches a plugin, unless its
// inheritEnv names it (Inherited): the shell that started a host may hold
// secrets that are none of its plugins' business.
func BaseEnv(parent []string) []string {
	vars := lookup(parent)
	out := make([]string, 0, len(baseVars)+4)
	for _, k := range baseVars {
		v, ok := vars[k]
		if k == "PATH" && !ok {
			v, ok = DefaultPath, true
		}
		if ok {
			out = append(out, k+"="+v)
		}
	}
	seen := map[string]bool{}
	for i := len(parent) - 1; i >= 0; i-- { // the last of a name counts, as in getenv
		k, _, ok := strings.Cut(parent[i], "=")
		if ok && strings.HasPrefix(k, instance.EnvPrefix) && !seen[k] {
			seen[k] = true
			out = append(out, k+"="+vars[k])
		}
	}
	return out
}

// Inherited is what a plugin's inheritEnv passes on of parent, as
// KEY=VALUE in the order of names: each name parent sets. A name it does
// not set is left out, not set empty.
func Inherited(parent, names []string) []string {
	if len(names) == 0 {
		return nil
	}
	vars := lookup(parent)
	var out []string
	for _, k := range names {
		if v, ok := vars[k]; ok {
			out = append(out, k+"="+v)
		}
	}
	return out
}

// lookup maps the names of env (KEY=VALUE) to their values, the last of a
// name winning.
func lookup(env []string) map[string]string {
	vars := make(map[string]string, len(env))
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok {
			vars[k] = v
		}
	}
	return vars
}
