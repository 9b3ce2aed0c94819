package local

import (
	"fmt"
	"os"

	"github.com/graftland/graft/internal/proc"
	"github.com/graftland/graft/runtime"
)

// cred is who a plugin's process runs as, resolved on this machine.
type cred struct {
	c   *proc.Cred        // nil: as this process
	env map[string]string // the user's HOME, USER and LOGNAME
}

// sys is the credential the spawn gives the child; nil for c nil.
func (c *cred) sys() *proc.Cred {
	if c == nil {
		return nil
	}
	return c.c
}

// credential resolves the plugin's user and group in this machine's user
// database (a runner's own, for a runner plugin), and refuses them when
// this process is not root and they are not its own. A process that is
// not root and is asked for its own ids is given none: it could not set
// its supplementary groups.
func credential(req runtime.Request) (*cred, error) {
	rc, err := req.Launch.Resolve()
	if err != nil || rc == nil {
		if err != nil {
			err = fmt.Errorf("start %s: %w", req.Name, err)
		}
		return nil, err
	}
	if why := rc.Permitted(os.Geteuid(), os.Getegid()); why != "" {
		return nil, &CredError{Plugin: req.Name, Why: why}
	}
	c := &cred{env: rc.Env}
	if os.Geteuid() == 0 {
		c.c = &proc.Cred{Uid: rc.Uid, Gid: rc.Gid, Groups: rc.Groups}
	}
	return c, nil
}
