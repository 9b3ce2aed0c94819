package launch

import (
	"fmt"
	"os"
	"os/user"
	"slices"
	"strconv"
	"strings"
)

// Cred is who a process runs as, its User and Group resolved in a user
// database (docs/semantics.md, "User and group").
type Cred struct {
	// Uid and Gid are the process's user and group ids.
	Uid, Gid uint32
	// Groups are its supplementary groups: the user's in the user
	// database (as initgroups(3) sets them), with Gid; Gid alone when
	// the user is given by a number the database does not know, or not
	// at all.
	Groups []uint32
	// Env is HOME, USER and LOGNAME for the user, when the database
	// knows it: the process gets them unless its env or inheritEnv sets
	// them.
	Env map[string]string
}

// account checks a user or group: a name or a number a process can have.
func (c *checker) account(field, v string) {
	if !c.is(field, v != "") {
		return
	}
	switch {
	case v == "":
		c.add(field, "empty; want a name or a number")
	case strings.ContainsAny(v, ":\x00 \t\n\r\v\f"):
		c.add(field, "bad %s %q: want a name or a number", field, v)
	case isNumber(v):
		if _, err := strconv.ParseUint(v, 10, 32); err != nil || v == "4294967295" {
			c.add(field, "bad %s id %s: want a number below 4294967295", field, v)
		}
	}
}

func isNumber(v string) bool {
	return v != "" && strings.Trim(v, "0123456789") == ""
}

// Resolve is who s's process runs as, looked up in this machine's user
// database: nil when s gives neither user nor group. Without a user the
// process keeps this process's uid and gets the group alone.
func (s *Spec) Resolve() (*Cred, error) {
	if s.User == "" && s.Group == "" {
		return nil, nil
	}
	c := &Cred{Uid: uint32(os.Geteuid()), Gid: uint32(os.Getegid())}
	var u *user.User
	if s.User != "" {
		var err error
		if u, c.Uid, err = LookupUser(s.User); err != nil {
			return nil, err
		}
		if u == nil && s.Group == "" {
			return nil, fmt.Errorf("user %s: no such uid in the user database, so it has no group: give group too", s.User)
		}
	}
	if u != nil {
		gid, err := strconv.ParseUint(u.Gid, 10, 32)
		if err != nil {
			return nil, fmt.Errorf("user %s: its group id %q is not a number", s.User, u.Gid)
		}
		c.Gid = uint32(gid)
	}
	if s.Group != "" {
		gid, err := LookupGroup(s.Group)
		if err != nil {
			return nil, err
		}
		c.Gid = gid
	}
	c.Groups = []uint32{c.Gid}
	if u != nil {
		ids, err := u.GroupIds()
		if err != nil {
			return nil, fmt.Errorf("user %s: its groups: %w", s.User, err)
		}
		for _, id := range ids {
			if g, err := strconv.ParseUint(id, 10, 32); err == nil && !slices.Contains(c.Groups, uint32(g)) {
				c.Groups = append(c.Groups, uint32(g))
			}
		}
		c.Env = map[string]string{"HOME": u.HomeDir, "USER": u.Username, "LOGNAME": u.Username}
	}
	return c, nil
}

// LookupUser finds a user by name or number: the database's entry, nil
// for a number it does not know, and the uid.
func LookupUser(v string) (*user.User, uint32, error) {
	if isNumber(v) {
		id, err := strconv.ParseUint(v, 10, 32)
		if err != nil {
			return nil, 0, fmt.Errorf("bad user id %s", v)
		}
		u, err := user.LookupId(v)
		if err != nil {
			return nil, uint32(id), nil
		}
		return u, uint32(id), nil
	}
	u, err := user.Lookup(v)
	if err != nil {
		return nil, 0, fmt.Errorf("unknown user %q: not in the user database of this machine", v)
	}
	id, err := strconv.ParseUint(u.Uid, 10, 32)
	if err != nil {
		return nil, 0, fmt.Errorf("user %s: its id %q is not a number", v, u.Uid)
	}
	return u, uint32(id), nil
}

// LookupGroup finds a group by name or number; any number is a gid.
func LookupGroup(v string) (uint32, error) {
	if isNumber(v) {
		id, err := strconv.ParseUint(v, 10, 32)
		if err != nil {
			return 0, fmt.Errorf("bad group id %s", v)
		}
		return uint32(id), nil
	}
	g, err := user.LookupGroup(v)
	if err != nil {
		return 0, fmt.Errorf("unknown group %q: not in the group database of this machine", v)
	}
	id, err := strconv.ParseUint(g.Gid, 10, 32)
	if err != nil {
		return 0, fmt.Errorf("group %s: its id %q is not a number", v, g.Gid)
	}
	return uint32(id), nil
}

// Permitted reports why a process running as uid and gid cannot start
// c's process, or "" when it can: only root may start one as another
// user or group.
func (c *Cred) Permitted(uid, gid int) string {
	if c == nil || uid == 0 {
		return ""
	}
	if int(c.Uid) != uid || int(c.Gid) != gid {
		return fmt.Sprintf("runs as uid %d, not root: it cannot start a process as uid %d, gid %d", uid, c.Uid, c.Gid)
	}
	return ""
}
