package local

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/graftland/graft/internal/atomicfile"
	"github.com/graftland/graft/internal/privsock"
	"github.com/graftland/graft/internal/proc"
	"github.com/graftland/graft/internal/safefs"
	"github.com/graftland/graft/internal/statedir"
)

// maxSocketPath is what a unix socket's path holds (less its NUL).
const maxSocketPath = 103

// HandoverIn is where the init of the namespace of the daemon of state
// dir dir (a host's, or a runner's) waits for the daemon's next program
// (docs/upgrade.md): init.sock in dir, and init.log for the stops it makes
// with no daemon. A dir too deep for the socket has it elsewhere, as
// host.sock does (docs/state-dir.md, "Sockets elsewhere"), its path in
// init.sock.path; remove, called once the init has ended, removes what
// was made for it there. When no socket will do, the error says why, and
// the processes die with their daemon, as where no namespace can be made.
func HandoverIn(dir string) (h proc.Handover, remove func(), err error) {
	rec := filepath.Join(dir, statedir.InitLog)
	sock := filepath.Join(dir, statedir.InitSocket)
	if len(sock) <= maxSocketPath {
		return proc.Handover{Socket: sock, Record: rec}, func() {}, nil
	}
	link := filepath.Join(dir, statedir.InitSocketLink)
	if b, err := safefs.ReadFile(link, 4096); err == nil {
		p := strings.TrimSpace(string(b))
		if privsock.CheckDir(filepath.Dir(p)) == nil && len(p) <= maxSocketPath {
			return proc.Handover{Socket: p, Record: rec}, func() {}, nil // an earlier daemon's init may wait there
		}
	}
	d, err := privsock.SocketDir()
	if err != nil {
		return proc.Handover{}, nil, err
	}
	p := filepath.Join(d.Path, statedir.InitSocket)
	if !d.Fresh {
		sum := sha256.Sum256([]byte(sock))
		p = filepath.Join(d.Path, hex.EncodeToString(sum[:8])+"-"+statedir.InitSocket)
	}
	if len(p) > maxSocketPath {
		d.Remove()
		return proc.Handover{}, nil, fmt.Errorf("%s is too long for a socket", p)
	}
	if err := atomicfile.Write(link, []byte(p+"\n"), 0o600); err != nil {
		d.Remove()
		return proc.Handover{}, nil, err
	}
	remove = func() {
		d.Remove()
		os.Remove(link)
	}
	return proc.Handover{Socket: p, Record: rec}, remove, nil
}
