package etcd

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"strings"
	"sync"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/graftland/graft/elect"
	"github.com/graftland/graft/internal/tlsconf"
)

// The elections of one process on one cluster, with the same credentials,
// share one client: one connection per endpoint, one watch stream and one
// keepalive stream, whatever the number of plugins, instead of one of each
// per plugin. A host of 10 floating plugins holds 10 sessions' leases, all
// kept alive on its one stream; bench/README.md, "A fleet", has what this
// saves a cluster under 100 hosts.
var clients = struct {
	sync.Mutex
	m map[string]*shared
}{m: map[string]*shared{}}

// shared is a client and the elections using it.
type shared struct {
	c    *clientv3.Client
	refs int
}

// clientFor is the shared client for cfg's cluster and credentials, made
// when no election of this process uses one; release gives it back,
// closing it after its last user.
func clientFor(cfg elect.EtcdConfig) (c *clientv3.Client, release func(), err error) {
	key, err := clientKey(cfg)
	if err != nil {
		return nil, nil, err
	}
	clients.Lock()
	defer clients.Unlock()
	s := clients.m[key]
	if s == nil {
		c, err := newClient(cfg)
		if err != nil {
			return nil, nil, err
		}
		s = &shared{c: c}
		clients.m[key] = s
	}
	s.refs++
	var once sync.Once
	return s.c, func() {
		once.Do(func() {
			clients.Lock()
			s.refs--
			last := s.refs == 0
			if last {
				delete(clients.m, key)
			}
			clients.Unlock()
			if last {
				s.c.Close()
			}
		})
	}, nil
}

// clientKey tells clients apart: the endpoints, the user and password,
// and what the TLS files hold now (a certificate renewed in place makes a
// new client for the elections that start after it).
func clientKey(cfg elect.EtcdConfig) (string, error) {
	h := sha256.New()
	for _, f := range []string{cfg.CA, cfg.Cert, cfg.Key} {
		if f == "" {
			fmt.Fprint(h, "-\x00")
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			return "", fmt.Errorf("elect on etcd: %w", err)
		}
		fmt.Fprintf(h, "%d:%s\x00", len(b), b)
	}
	return fmt.Sprintf("%q %q %q %s", strings.Join(cfg.Endpoints, ","), cfg.Username, cfg.Password, hex.EncodeToString(h.Sum(nil))), nil
}

func newClient(cfg elect.EtcdConfig) (*clientv3.Client, error) {
	cc := clientv3.Config{
		Endpoints:   cfg.Endpoints,
		DialTimeout: dialTimeout,
		Username:    cfg.Username,
		Password:    cfg.Password,
		// The client logs its retries through zap, the logger it ships
		// with, to stderr; what matters reaches the host's log through
		// the errors the election returns.
		Logger: zap.NewNop(),
	}
	if cfg.CA != "" || cfg.Cert != "" || cfg.Key != "" {
		tc, err := tlsconf.Client(cfg.CA, cfg.Cert, cfg.Key)
		if err != nil {
			return nil, fmt.Errorf("elect on etcd: %w", err)
		}
		cc.TLS = tc
	}
	client, err := clientv3.New(cc)
	if err != nil {
		return nil, fmt.Errorf("elect on etcd %v: %w", cfg.Endpoints, err)
	}
	return client, nil
}
