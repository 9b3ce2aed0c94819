//go:build linux

package main

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/graftland/graft/elect"
	"github.com/graftland/graft/elect/etcd"
	"github.com/graftland/graft/internal/etcdtest"
)

// runEtcd measures the election on an etcd server of its own, with its
// data under root, with the session TTL of -ttl.
func runEtcd(root string) {
	srv, err := etcdtest.Launch(filepath.Join(root, "etcd"))
	check(err)
	defer srv.Stop()
	yaml := fmt.Sprintf("{address: %%q, renew: %d millis, etcd: {endpoints: [%q], sessionTTL: %d seconds}}",
		renew.Milliseconds(), srv.Endpoint(), int(ttl.Seconds()))
	// The bench reads who leads as another host would, through the
	// backend itself.
	reader, err := etcd.Open(elect.EtcdConfig{Endpoints: []string{srv.Endpoint()}, Prefix: "/graft/elect/",
		Instance: "bench.relay", HostID: "failoverbench", Address: "-", SessionTTL: ttl.Truncate(time.Second), Renew: *renew})
	check(err)
	defer reader.Close()
	killed, stopped := measure(root, yaml, func() (elect.Lease, error) {
		l, _, err := reader.Leader(context.Background())
		return l, err
	})
	report("etcd: kill -9 of the leader's host", killed, ttl.Truncate(time.Second), "session ttl")
	report("etcd: graceful stop of the leader's host", stopped, *poll, "poll")
}
