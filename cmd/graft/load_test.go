package main

import (
	"context"
	"fmt"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/graftland/graft/internal/loadgen"
)

// hammer URL DURATION [keepalive] sends GET requests to URL from four
// clients for DURATION (Go syntax), each on a new connection (or on kept
// ones), prints what it saw, and fails if any request failed, or none
// succeeded; with !, it fails unless some failed.
func cmdHammer(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) < 2 || len(args) > 3 || len(args) == 3 && args[2] != "keepalive" {
		ts.Fatalf("usage: hammer url duration [keepalive]")
	}
	d, err := time.ParseDuration(args[1])
	ts.Check(err)
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	res := loadgen.Run(ctx, loadgen.Options{URL: args[0], KeepAlive: len(args) == 3 && args[2] == "keepalive", Pause: time.Millisecond})
	fmt.Fprintln(ts.Stdout(), res)
	switch {
	case neg && res.Failures == 0:
		ts.Fatalf("no request failed: %s", res)
	case !neg && res.Failures > 0:
		ts.Fatalf("requests failed: %s", res)
	case !neg && res.Requests == 0:
		ts.Fatalf("no request was answered: %s", res)
	}
}
