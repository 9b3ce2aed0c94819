package skew

import "fmt"

// NewerError is a request of a later protocol than its daemon's: the
// daemon cannot know what the request means, so it refuses it rather
// than misread it (internal/guard answers it).
type NewerError struct {
	// Daemon is "host" or "runner".
	Daemon string
	// Server is the daemon's peer; Client the request's.
	Server, Client Peer
	// Upgrade says how to bring the daemon up to date: "run graft upgrade".
	Upgrade string
}

func (e *NewerError) Error() string {
	return fmt.Sprintf("this %s runs %s; the client is %s, which it does not understand: %s, or use graft %s",
		e.Daemon, e.Server, e.Client, e.Upgrade, e.Server.Version)
}
