//go:build linux

package main

import (
	"github.com/rogpeppe/go-internal/testscript"

	"github.com/graftland/graft/internal/testsupport"
)

// gencerts DIR writes, for the TLS scripts, a CA (ca.pem) with a server
// certificate for loopback (server.pem, server.key) and a client
// certificate (client.pem, client.key), and another CA (other-ca.pem)
// with a client certificate of its own (other-client.pem,
// other-client.key): real certificates (testsupport.WriteCerts).
func cmdGenCerts(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: gencerts dir")
	}
	testsupport.WriteCerts(ts, ts.MkAbs(args[0]))
}
