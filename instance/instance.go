// Package instance tells a plugin who it is: the identity graft gave this
// start of it (docs/semantics.md, "Identity and generations"). Plugin
// authors import it; it imports nothing of graft.
package instance

import (
	"os"
	"strconv"
	"strings"
)

// The environment variables graft sets in every plugin's environment
// (docs/semantics.md, "Identity and generations"). Every name of graft's
// own has the prefix EnvPrefix, which a plugins file may not use.
const (
	EnvPrefix     = "GRAFT_"
	EnvID         = "GRAFT_INSTANCE_ID"
	EnvGeneration = "GRAFT_GENERATION"
	EnvPlugin     = "GRAFT_PLUGIN"
	// EnvInvocation is an id unique to one start, like systemd's
	// INVOCATION_ID: a daemon started again finds by it what a previous
	// one left running, the processes that left their process group
	// included.
	EnvInvocation = "GRAFT_INVOCATION_ID"
)

// EnvAddr is the variable that gives the consumers of floating plugin
// name its leader's address: GRAFT_ADDR_ and the name in upper case, with
// '-' as '_'.
func EnvAddr(name string) string {
	return EnvPrefix + "ADDR_" + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
}

// EnvEpoch is the variable that gives the consumers of floating plugin
// name the epoch of the leader whose address EnvAddr gives: GRAFT_EPOCH_
// and the name as in EnvAddr. Every new epoch restarts them, at a new
// address or the same one.
func EnvEpoch(name string) string {
	return EnvPrefix + "EPOCH_" + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
}

// Reserved reports whether an environment variable's name is graft's,
// whatever its case.
func Reserved(name string) bool { return strings.HasPrefix(strings.ToUpper(name), EnvPrefix) }

// Instance is a plugin's identity, as in the table of docs/semantics.md,
// "Identity and generations":
//
//	runs in            ID                       Generation
//	through a runner   the instance name        grows with every replacement
//	local or worker    a fresh UUID every start always 1
//	not under graft    "local"                  0
//
// Use it for fencing: an external system that remembers the highest
// generation it has seen, and rejects writes from lower ones, keeps a slow
// old copy from overwriting a new one (see fence).
type Instance struct {
	ID         string
	Generation int64
}

// Local is the identity of a program not started by graft.
var Local = Instance{ID: "local", Generation: 0}

// Current returns the identity graft gave this process, or Local when it
// was not started by graft. A generation that is not a number reads as 0.
func Current() Instance {
	id := os.Getenv(EnvID)
	if id == "" {
		return Local
	}
	gen, _ := strconv.ParseInt(os.Getenv(EnvGeneration), 10, 64)
	return Instance{ID: id, Generation: gen}
}

// Plugin returns the name of the plugin this process runs as, or "" when
// it was not started by graft.
func Plugin() string { return os.Getenv(EnvPlugin) }
