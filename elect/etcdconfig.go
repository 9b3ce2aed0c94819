package elect

import (
	"fmt"
	"time"
)

// DefaultSessionTTL is an etcd election's session TTL when none is set:
// the ttl of the file backend's lease (docs/semantics.md, "Floating
// plugins: the election").
const DefaultSessionTTL = 15 * time.Second

// EtcdConfig says how one host takes part in one instance's election on
// etcd. It lives here, not beside the etcd backend, so that what builds it
// from a spec (runtime/floating) does not link the etcd client: only a
// program that opens such an election (the host) does.
type EtcdConfig struct {
	// Endpoints are the etcd servers' client URLs.
	Endpoints []string
	// Prefix is the key prefix of every election; the instance's
	// candidates put their keys under Prefix + Instance + "/".
	Prefix string
	// Instance, HostID and Address are as in Config.
	Instance, HostID, Address string
	// SessionTTL is the session's lease, in whole seconds: a leader whose
	// keepalives stop is replaced that long after the last one.
	SessionTTL time.Duration
	// Renew is how often the leader renews its lease itself, to know by
	// when it must have stopped its plugin (Leadership.Deadline); zero:
	// DefaultRenew. It must be shorter than SessionTTL.
	Renew time.Duration
	// CA, Cert and Key are PEM files: the CA that signed the servers'
	// certificates (with TLS on), and this client's certificate and key.
	// All empty: plain TCP.
	CA, Cert, Key string
	// Username and Password authenticate to etcd, when Username is set.
	Username, Password string
	// StopBudget is as in Config: a SessionTTL that cannot hold it is
	// refused (MinTTL).
	StopBudget time.Duration
	// Clock is nil for real time.
	Clock Clock
}

// Fill checks c and fills in its defaults.
func (c *EtcdConfig) Fill() error {
	switch {
	case len(c.Endpoints) == 0:
		return &ConfigError{Field: "Endpoints", Reason: "empty"}
	case c.Instance == "":
		return &ConfigError{Field: "Instance", Reason: "empty"}
	case c.HostID == "":
		return &ConfigError{Field: "HostID", Reason: "empty"}
	case c.Address == "":
		return &ConfigError{Field: "Address", Reason: "empty"}
	case c.SessionTTL < 0:
		return &ConfigError{Field: "SessionTTL", Reason: "negative"}
	case c.Renew < 0:
		return &ConfigError{Field: "Renew", Reason: "negative"}
	case c.StopBudget < 0:
		return &ConfigError{Field: "StopBudget", Reason: "negative"}
	}
	if c.SessionTTL == 0 {
		c.SessionTTL = DefaultSessionTTL
	}
	if c.SessionTTL%time.Second != 0 {
		return &ConfigError{Field: "SessionTTL", Reason: fmt.Sprintf("%s is not whole seconds: etcd's leases count seconds", c.SessionTTL)}
	}
	if c.Renew == 0 {
		c.Renew = DefaultRenew
	}
	if c.Renew >= c.SessionTTL {
		return &ConfigError{Field: "Renew", Reason: "must be shorter than SessionTTL"}
	}
	if least := MinTTL(c.Renew, c.StopBudget); c.StopBudget > 0 && c.SessionTTL <= least {
		return &ConfigError{Field: "SessionTTL", Reason: fmt.Sprintf("%s leaves no time to stop the plugin: ttl must be longer than 2 × renew + %s = %s", c.SessionTTL, c.StopBudget, least)}
	}
	if c.Clock == nil {
		c.Clock = realClock{}
	}
	return nil
}

// Candidates is the prefix under which the instance's candidates put their keys.
func (c *EtcdConfig) Candidates() string { return c.Prefix + c.Instance + "/" }
