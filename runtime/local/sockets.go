package local

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/graftland/graft/internal/atomicfile"
	"github.com/graftland/graft/internal/proc"
	"github.com/graftland/graft/internal/safefs"
	"github.com/graftland/graft/launch"
	"github.com/graftland/graft/runtime"
)

// The sockets a Local holds for its plugins (launch.Listen,
// docs/semantics.md "Held sockets"): bound once, by the plugin's key (its
// instance when its request has an identity, else its name), and kept
// open across its processes: each start gets the ones its spec lists as
// descriptors 3 and on, with LISTEN_FDS and LISTEN_FDNAMES (LISTEN_PID
// is set in the child, internal/proc). A socket the spec no longer lists,
// or whose address changed, is closed at the next start, or by Hold with
// the plugin's new listens, or Release. Across an exec of the daemon
// (graft upgrade, a runner's SIGHUP) they are handed to the next program
// through Options.Sockets.

// heldSocket is one socket held for a plugin.
type heldSocket struct {
	name    string // its name in LISTEN_FDNAMES
	address string // launch.Listen.Address, its unix path resolved
	mode    uint32 // a unix socket's
	f       *os.File
}

// socketTable is the Local's held sockets, by plugin key.
type socketTable struct {
	mu    sync.Mutex
	byKey map[string][]*heldSocket
}

// SocketKey is the key of req's plugin among the held sockets.
func SocketKey(req runtime.Request) string {
	if req.Launch.ListenKey != "" {
		return req.Launch.ListenKey // shared by the plugin's replicas
	}
	if req.Identity != nil {
		return req.Identity.ID
	}
	return req.Name
}

// resolved is ls with each unix path resolved against the request's dir.
func resolved(req runtime.Request, ls []launch.Listen) []launch.Listen {
	out := make([]launch.Listen, len(ls))
	for i, l := range ls {
		if l.Unix != "" {
			l.Unix = req.Path(l.Unix)
		}
		out[i] = l
	}
	return out
}

// hold makes the sockets of key those of ls, in order: each one held
// already at the same name and address is kept, the others bound now,
// and those held that ls no longer lists closed. A socket that cannot be
// bound fails it, and nothing changes.
func (t *socketTable) hold(key string, ls []launch.Listen) ([]*heldSocket, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	cur := t.byKey[key]
	out := make([]*heldSocket, len(ls))
	var fresh []*heldSocket
	for i, l := range ls {
		// A socket at the same address is kept, renamed if need be, its
		// mode changed if need be.
		for _, s := range cur {
			if s.address == l.Address() && !containsSocket(out, s) {
				s.name = l.Name
				if l.Unix != "" && s.mode != l.FileMode() {
					if err := os.Chmod(l.Unix, fs.FileMode(l.FileMode())); err != nil {
						return nil, fmt.Errorf("listen[%d] (%s): %w", i, l.Name, err)
					}
					s.mode = l.FileMode()
				}
				out[i] = s
				break
			}
		}
		if out[i] != nil {
			continue
		}
		s, err := bind(l)
		if err != nil {
			for _, s := range fresh {
				s.close()
			}
			return nil, fmt.Errorf("listen[%d] (%s): %w", i, l.Name, err)
		}
		out[i] = s
		fresh = append(fresh, s)
	}
	for _, s := range cur {
		if !containsSocket(out, s) {
			s.close()
		}
	}
	if len(out) == 0 {
		delete(t.byKey, key)
	} else {
		if t.byKey == nil {
			t.byKey = map[string][]*heldSocket{}
		}
		t.byKey[key] = out
	}
	return out, nil
}

func containsSocket(ss []*heldSocket, s *heldSocket) bool {
	for _, o := range ss {
		if o == s {
			return true
		}
	}
	return false
}

// release closes the sockets of key.
func (t *socketTable) release(key string) {
	t.mu.Lock()
	ss := t.byKey[key]
	delete(t.byKey, key)
	t.mu.Unlock()
	for _, s := range ss {
		s.close()
	}
}

// closeAll closes every socket.
func (t *socketTable) closeAll() {
	t.mu.Lock()
	all := t.byKey
	t.byKey = nil
	t.mu.Unlock()
	for _, ss := range all {
		for _, s := range ss {
			s.close()
		}
	}
}

func (s *heldSocket) close() {
	s.f.Close()
	if path, ok := strings.CutPrefix(s.address, "unix:"); ok {
		os.Remove(path)
	}
}

// bind opens the socket l, listening; a unix socket left at its path by
// a process that died is replaced, one that answers is not.
func bind(l launch.Listen) (*heldSocket, error) {
	var ln net.Listener
	var err error
	if l.Unix != "" {
		ln, err = bindUnix(l.Unix, l.FileMode())
	} else {
		ln, err = net.Listen("tcp", l.TCP)
	}
	if err != nil {
		return nil, err
	}
	defer ln.Close() // the socket lives on in its file
	if u, ok := ln.(*net.UnixListener); ok {
		u.SetUnlinkOnClose(false)
	}
	f, err := ln.(interface{ File() (*os.File, error) }).File()
	if err != nil {
		return nil, err
	}
	// In blocking mode, as systemd hands its sockets over: a program sets
	// another mode itself. Never changed from then on (proc.FD), since
	// the plugin's processes share it.
	f.Fd()
	return &heldSocket{name: l.Name, address: l.Address(), mode: l.FileMode(), f: f}, nil
}

// bindUnix listens on a unix socket of mode at path, in place of a socket
// that no one answers at; the directory is made if missing.
func bindUnix(path string, mode uint32) (net.Listener, error) {
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode()&fs.ModeSocket == 0 {
			return nil, fmt.Errorf("listen on %s: a file that is not a socket is there", path)
		}
		if c, err := net.Dial("unix", path); err == nil {
			c.Close()
			return nil, fmt.Errorf("listen on %s: something answers there already", path)
		}
		os.Remove(path)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return nil, err
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, err
	}
	if err := os.Chmod(path, fs.FileMode(mode)); err != nil {
		ln.Close()
		return nil, err
	}
	return ln, nil
}

// withListen is env with LISTEN_FDS and LISTEN_FDNAMES for ss in place
// of any it set.
func withListen(env []string, ss []*heldSocket) []string {
	if len(ss) == 0 {
		return env
	}
	out := env[:0:0]
	for _, kv := range env {
		if !strings.HasPrefix(kv, "LISTEN_") {
			out = append(out, kv)
		}
	}
	names := make([]string, len(ss))
	for i, s := range ss {
		names[i] = s.name
	}
	return append(out, "LISTEN_FDS="+strconv.Itoa(len(ss)), "LISTEN_FDNAMES="+strings.Join(names, ":"))
}

func filesOf(ss []*heldSocket) []*os.File {
	out := make([]*os.File, len(ss))
	for i, s := range ss {
		out[i] = s.f
	}
	return out
}

// Hold binds now the sockets listens of the plugin of req (its key and
// dir), keeps those it holds already, and closes those it no longer
// lists: what an apply does before it stops anything, so that an address
// that cannot be bound fails it first.
func (l *Local) HoldSockets(req runtime.Request, listens []launch.Listen) error {
	_, err := l.sockets.hold(SocketKey(req), resolved(req, listens))
	return err
}

// ReleaseSockets closes the sockets held for the plugin of req: it left
// the spec.
func (l *Local) ReleaseSockets(req runtime.Request) { l.sockets.release(SocketKey(req)) }

// KeepSockets closes the sockets held for every plugin whose key keep
// does not keep: they left the spec, or listen no more.
func (l *Local) KeepSockets(keep func(key string) bool) {
	l.sockets.mu.Lock()
	var drop []string
	for key := range l.sockets.byKey {
		if !keep(key) {
			drop = append(drop, key)
		}
	}
	l.sockets.mu.Unlock()
	for _, key := range drop {
		l.sockets.release(key)
	}
}

// SocketsClaimed is why sockets the last program of this process handed
// over were not taken back (claimSockets), or nil.
func (l *Local) SocketsClaimed() error { return l.claimErr }

// The record of the held sockets that a daemon about to execute its next
// program leaves it, at Options.Sockets: each socket by its key, name and
// address, with the descriptor it has in this process, which the next
// program inherits. It is claimed by the same pid (an exec keeps it),
// and each descriptor only if it is still a listening socket at that
// address.
type socketsRecord struct {
	PID     int              `json:"pid"`
	Sockets []recordedSocket `json:"sockets"`
}

type recordedSocket struct {
	Key     string `json:"key"`
	Name    string `json:"name"`
	Address string `json:"address"`
	Mode    uint32 `json:"mode,omitempty"`
	FD      int    `json:"fd"`
}

// HandSockets readies the held sockets for the next program, executed in
// this process: their descriptors survive the exec, and their record is
// written at Options.Sockets. undo undoes it, when the exec fails.
func (l *Local) HandSockets() (undo func(), err error) {
	if l.opt.Sockets == "" {
		return func() {}, nil
	}
	rec := socketsRecord{PID: os.Getpid()}
	l.sockets.mu.Lock()
	for key, ss := range l.sockets.byKey {
		for _, s := range ss {
			if err := proc.Inheritable(s.f, true); err != nil {
				l.sockets.mu.Unlock()
				return nil, err
			}
			rec.Sockets = append(rec.Sockets, recordedSocket{Key: key, Name: s.name, Address: s.address, Mode: s.mode, FD: proc.FD(s.f)})
		}
	}
	l.sockets.mu.Unlock()
	undo = func() {
		os.Remove(l.opt.Sockets)
		l.sockets.mu.Lock()
		defer l.sockets.mu.Unlock()
		for _, ss := range l.sockets.byKey {
			for _, s := range ss {
				proc.Inheritable(s.f, false)
			}
		}
	}
	if len(rec.Sockets) == 0 {
		return undo, nil
	}
	b, _ := json.Marshal(rec) // plain fields: always marshals
	if err := atomicfile.Write(l.opt.Sockets, append(b, '\n'), 0o600); err != nil {
		undo()
		return nil, err
	}
	return undo, nil
}

// claimSockets takes the sockets the last program of this process left
// at Options.Sockets, and removes the record. A descriptor that is not a
// listening socket at its address is not taken.
func (l *Local) claimSockets() error {
	if l.opt.Sockets == "" {
		return nil
	}
	b, err := safefs.ReadFile(l.opt.Sockets, 1<<20)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	os.Remove(l.opt.Sockets)
	if err != nil {
		return err
	}
	var rec socketsRecord
	if err := json.Unmarshal(b, &rec); err != nil {
		return fmt.Errorf("%s: %w", l.opt.Sockets, err)
	}
	if rec.PID != os.Getpid() {
		return nil // an earlier process's, whose descriptors are not this one's
	}
	var bad []string
	for _, r := range rec.Sockets {
		f, ok := listeningAt(r.FD, r.Address)
		if !ok {
			bad = append(bad, r.Name)
			continue
		}
		l.sockets.mu.Lock()
		if l.sockets.byKey == nil {
			l.sockets.byKey = map[string][]*heldSocket{}
		}
		l.sockets.byKey[r.Key] = append(l.sockets.byKey[r.Key], &heldSocket{name: r.Name, address: r.Address, mode: r.Mode, f: f})
		l.sockets.mu.Unlock()
	}
	if len(bad) > 0 {
		return fmt.Errorf("the sockets %s handed over are not listening where recorded: they are bound again at their next start", strings.Join(bad, ", "))
	}
	return nil
}

// listeningAt is descriptor fd as a file, made close-on-exec again, if
// it is a listening socket at address (launch.Listen.Address). It is
// checked before it is taken: a descriptor that is something else is not
// this program's to close.
func listeningAt(fd int, address string) (*os.File, bool) {
	if fd < 3 {
		return nil, false
	}
	at, ok := proc.Listening(fd)
	if !ok || !sameAddress(at, address) {
		return nil, false
	}
	f := os.NewFile(uintptr(fd), address)
	if proc.Inheritable(f, false) != nil {
		f.Close()
		return nil, false
	}
	return f, true
}

// sameAddress reports whether a socket bound at got is the one asked for
// at want: a TCP port asked on any address ("tcp::8080") is bound at
// "[::]:8080".
func sameAddress(got, want string) bool {
	if got == want {
		return true
	}
	gh, gp, err1 := net.SplitHostPort(strings.TrimPrefix(got, "tcp:"))
	wh, wp, err2 := net.SplitHostPort(strings.TrimPrefix(want, "tcp:"))
	if err1 != nil || err2 != nil || gp != wp || !strings.HasPrefix(got, "tcp:") {
		return false
	}
	gip, wip := net.ParseIP(gh), net.ParseIP(wh)
	return wh == "" && gip != nil && gip.IsUnspecified() || gip != nil && wip != nil && gip.Equal(wip)
}
