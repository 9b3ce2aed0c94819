package local

import (
	"fmt"
	"maps"
	"os"
	"slices"

	"github.com/graftland/graft/internal/proc"
	"github.com/graftland/graft/launch"
	"github.com/graftland/graft/runtime"
)

// cred is who a plugin's process runs as, resolved on this machine, and
// the umask and limits it starts with.
type cred struct {
	c      *proc.Cred        // nil: as this process
	env    map[string]string // the user's HOME, USER and LOGNAME
	umask  *uint32
	limits []proc.Limit
}

// cmd is cmd with the process's ids, umask and limits.
func (c *cred) cmd(cmd proc.Cmd) proc.Cmd {
	cmd.Cred, cmd.Umask, cmd.Limits = c.c, c.umask, c.limits
	return cmd
}

// credential resolves the plugin's user and group in this machine's user
// database (a runner's own, for a runner plugin), and refuses them when
// this process is not root and they are not its own. A process that is
// not root and is asked for its own ids is given none: it could not set
// its supplementary groups.
func credential(req runtime.Request) (*cred, error) {
	c := &cred{}
	if err := c.setup(req); err != nil {
		return nil, err
	}
	rc, err := req.Launch.Resolve()
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", req.Name, err)
	}
	if rc == nil {
		return c, nil
	}
	if why := rc.Permitted(os.Geteuid(), os.Getegid()); why != "" {
		return nil, &CredError{Plugin: req.Name, Why: why}
	}
	c.env = rc.Env
	if os.Geteuid() == 0 {
		c.c = &proc.Cred{Uid: rc.Uid, Gid: rc.Gid, Groups: rc.Groups}
	}
	return c, nil
}

// setup reads the plugin's umask and limits, and refuses a limit this
// process cannot grant (launch.Ungrantable): a runner's, which the host
// that loaded the spec could not check.
func (c *cred) setup(req runtime.Request) error {
	l := req.Launch
	if l.Umask != "" {
		m, err := launch.ParseUmask(l.Umask)
		if err != nil {
			return fmt.Errorf("start %s: %w", req.Name, err)
		}
		c.umask = &m
	}
	if ps := launch.Ungrantable(l.Limits); len(ps) > 0 {
		return fmt.Errorf("start %s: %w", req.Name, ps)
	}
	for _, name := range slices.Sorted(maps.Keys(l.Limits)) {
		r, ok := launch.Resource(name)
		if !ok {
			return fmt.Errorf("start %s: unknown resource limit %q", req.Name, name)
		}
		c.limits = append(c.limits, proc.Limit{Resource: r, Soft: uint64(l.Limits[name].Soft), Hard: uint64(l.Limits[name].Hard)})
	}
	return nil
}
