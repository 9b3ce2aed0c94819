package local

import "fmt"

// CredError is a start refused because this process may not give the
// plugin the user or group its spec asks for.
type CredError struct {
	Plugin string
	Why    string
}

func (e *CredError) Error() string {
	return fmt.Sprintf("start %s: this daemon %s", e.Plugin, e.Why)
}

// Hint says what the operator can do about it.
func (e *CredError) Hint() string {
	return "run graft (the host, or the runner) as root, or drop the plugin's user and group"
}
