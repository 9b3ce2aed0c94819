package proc

import (
	"encoding/json"
	"os"
	"strings"
	"time"
)

// Handover is where the init of a Spawner's namespace waits for the next
// host, once its own is gone.
type Handover struct {
	// Socket is the path of its attach socket.
	Socket string
	// Record is the file where it records, a JSON line each, the stops it
	// makes with no host (HeldStop).
	Record string
}

// HeldStop is a stop an init made with no host: the line it records.
type HeldStop struct {
	Tag      string    `json:"tag"`
	HostGone time.Time `json:"hostGone"`
	At       time.Time `json:"at"`
	// Outcome is "exited" (gone within its stop timeout) or "killed".
	Outcome string `json:"outcome"`
	// Status is its wait status, as "exit status N" or "signal: NAME".
	Status string `json:"status"`
}

// Held is a plugin that an init kept for this host: its process, the read
// end of its output pipe (nil without one), and its tag (Cmd.Tag).
type Held struct {
	Process *Process
	Output  *os.File
	Tag     string
	// HostGone is when the init found its host gone.
	HostGone time.Time
}

// ParseHeldStops reads a record of the stops an init made with no host.
// A line that cannot be read is skipped.
func ParseHeldStops(b []byte) []HeldStop {
	var out []HeldStop
	for _, line := range strings.Split(string(b), "\n") {
		var s HeldStop
		if json.Unmarshal([]byte(line), &s) == nil {
			out = append(out, s)
		}
	}
	return out
}
