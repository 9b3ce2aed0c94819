package launch

import (
	"fmt"
	"net"
	"strconv"
	"strings"
)

// Listen is a socket that the daemon starting the plugin (the host, or
// the runner) opens and holds, and hands to each of its processes as
// systemd's socket activation does: as descriptors 3 and on, in order,
// with LISTEN_FDS, LISTEN_PID and LISTEN_FDNAMES (docs/semantics.md, "Held
// sockets"). The socket stays open across the plugin's stops, restarts
// and replacements, so a connection that comes between two processes
// waits in its queue. The same fields serve plugins.yaml and the runner's
// wire.
type Listen struct {
	// Name is the socket's name in LISTEN_FDNAMES: letters, digits, '-',
	// '_' and '.', unique in the plugin.
	Name string `json:"name" yaml:"name"`
	// TCP is a host:port to listen on; Unix a path, relative to the
	// spec's directory. Exactly one is given.
	TCP  string `json:"tcp,omitempty" yaml:"tcp"`
	Unix string `json:"unix,omitempty" yaml:"unix"`
	// Mode is a unix socket's mode, octal ("0660"); DefaultSocketMode
	// when empty.
	Mode string `json:"mode,omitempty" yaml:"mode"`
}

// DefaultSocketMode is a held unix socket's mode when it has none: its
// owner's alone.
const DefaultSocketMode = 0o600

// maxListen bounds a plugin's sockets: what LISTEN_FDS passes.
const maxListen = 64

// Address is where l listens, as "tcp:HOST:PORT" or "unix:PATH": what
// tells two sockets apart.
func (l Listen) Address() string {
	if l.Unix != "" {
		return "unix:" + l.Unix
	}
	return "tcp:" + l.TCP
}

// FileMode is l's mode, DefaultSocketMode when unset (Mode is checked).
func (l Listen) FileMode() uint32 {
	m, err := strconv.ParseUint(l.Mode, 8, 32)
	if l.Mode == "" || err != nil {
		return DefaultSocketMode
	}
	return uint32(m)
}

// listen checks the sockets: each named once, at one address, a TCP
// address with a port, a unix path without NUL, a mode in octal.
func (c *checker) listen(ls []Listen) {
	if len(ls) > maxListen {
		c.add("listen", "%d sockets: at most %d", len(ls), maxListen)
	}
	names := map[string]bool{}
	addrs := map[string]string{}
	for i, l := range ls {
		f := fmt.Sprintf("listen[%d]", i)
		switch {
		case l.Name == "":
			c.add(f+".name", "want a name, such as http")
		case !validSocketName(l.Name):
			c.add(f+".name", "bad name %q: letters, digits, '-', '_' and '.' only, at most 255", l.Name)
		case names[l.Name]:
			c.add(f+".name", "the name %q is given twice", l.Name)
		}
		names[l.Name] = true
		tcp, unix := c.is(f+".tcp", l.TCP != ""), c.is(f+".unix", l.Unix != "")
		switch {
		case tcp && unix:
			c.add(f, "give tcp or unix, not both")
		case !tcp && !unix:
			c.add(f, "want tcp (such as \"127.0.0.1:8080\") or unix (such as run/api.sock)")
		case tcp:
			if host, port, err := net.SplitHostPort(l.TCP); err != nil || port == "" || strings.ContainsAny(host, " \x00") {
				c.add(f+".tcp", "bad address %q: want HOST:PORT, such as \"127.0.0.1:8080\" or \":8080\"", l.TCP)
			} else if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
				c.add(f+".tcp", "bad port %q: want a number from 1 to 65535 (a held socket's port is fixed)", port)
			}
			if l.Mode != "" {
				c.add(f+".mode", "a mode is for a unix socket")
			}
		default:
			if l.Unix == "" || strings.IndexByte(l.Unix, 0) >= 0 {
				c.add(f+".unix", "want a path without NUL, such as run/api.sock")
			}
		}
		if c.is(f+".mode", l.Mode != "") {
			if m, err := strconv.ParseUint(l.Mode, 8, 32); err != nil || m > 0o777 {
				c.add(f+".mode", "bad mode %q: want octal permissions, such as \"0660\"", l.Mode)
			}
		}
		if other, ok := addrs[l.Address()]; ok && (l.TCP != "" || l.Unix != "") {
			c.add(f, "listens where %s does", other)
		}
		addrs[l.Address()] = f
	}
}

// validSocketName reports whether name can be one of LISTEN_FDNAMES,
// which systemd bounds as a unit's file descriptor names.
func validSocketName(name string) bool {
	if len(name) > 255 {
		return false
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.') {
			return false
		}
	}
	return true
}

// maxListenKey bounds a ListenKey: an instance name and a prefix.
const maxListenKey = 300

// listenKey checks the key of shared sockets: printable, and short.
func (c *checker) listenKey(key string) {
	if len(key) > maxListenKey || strings.IndexFunc(key, func(r rune) bool { return r < 0x20 || r > 0x7e }) >= 0 {
		c.add("listenKey", "bad key %q: printable ASCII, at most %d bytes", key, maxListenKey)
	}
}
