package guard

import "fmt"

// TokenRequiredError is a TCP listener asked for without a token. Whoever
// reaches a TCP port, loopback included, could otherwise run any command
// as the daemon's user: another user of the machine, or a web page
// through the browser of anyone on it.
type TokenRequiredError struct {
	// Daemon is the command: "graft host" or "graft runner".
	Daemon string
	// Listen is the address asked for.
	Listen string
}

func (e *TokenRequiredError) Error() string {
	return fmt.Sprintf("%s --listen %s: a TCP listener requires a token, loopback included: --token-file FILE", e.Daemon, e.Listen)
}

// Hint tells the operator how to make one.
func (e *TokenRequiredError) Hint() string {
	return "write a long random token to a file only you can read (umask 077; head -c 32 /dev/urandom | base64 > token) and pass it with --token-file; its clients pass the same file"
}
