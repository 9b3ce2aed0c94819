package floating

import (
	"fmt"
	"os"
	"strings"

	"github.com/graftland/graft/elect"
	"github.com/graftland/graft/runtime"
)

// EtcdConfig is the election on etcd of req's plugin, from its spec: the
// paths resolved against the spec's directory, the password read from its
// file (without its trailing newline).
func EtcdConfig(req runtime.Request, addr string) (elect.EtcdConfig, error) {
	pl, e := req.Plugin, req.Plugin.Elect
	c := e.Etcd
	cfg := elect.EtcdConfig{
		Endpoints: c.Endpoints, Prefix: c.Prefix, Instance: pl.Instance, Address: addr,
		SessionTTL: c.SessionTTL.Std(), Renew: e.Renew.Std(), Username: c.Username,
	}
	if t := c.TLS; t != nil {
		cfg.CA, cfg.Cert, cfg.Key = specPath(req, t.CA), specPath(req, t.Cert), specPath(req, t.Key)
	}
	if c.PasswordFile != "" {
		b, err := os.ReadFile(req.Path(c.PasswordFile))
		if err != nil {
			return cfg, fmt.Errorf("etcd's password: %w", err)
		}
		cfg.Password = strings.TrimRight(string(b), "\r\n")
	}
	return cfg, nil
}

// specPath is p resolved as the spec means it, or empty.
func specPath(req runtime.Request, p string) string {
	if p == "" {
		return ""
	}
	return req.Path(p)
}
