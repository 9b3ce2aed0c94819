// Package instance tells a plugin who it is: the identity graft gave this
// start of it (docs/semantics.md, "Identity and generations"). Plugin
// authors import it; it imports nothing of graft.
package instance

import (
	"os"
	"strconv"
)

// The environment variables graft sets in every plugin's environment.
const (
	EnvID         = "GRAFT_INSTANCE_ID"
	EnvGeneration = "GRAFT_GENERATION"
	EnvPlugin     = "GRAFT_PLUGIN"
)

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
