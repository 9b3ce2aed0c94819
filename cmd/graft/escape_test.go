//go:build linux

package main

import (
	"context"
	"os"
	"strconv"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/graftland/graft/hostapi"
)

// applyas HOLDER FILE begins an apply of FILE on the host of $WORK/.graft
// as a client that names itself HOLDER, a Go string literal (so it may
// hold control characters, as any client may send), and returns once the
// host is applying; the script's end waits for the apply.
func cmdApplyAs(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: applyas holder file")
	}
	holder, err := strconv.Unquote(args[0])
	ts.Check(err)
	file := ts.MkAbs(args[1])
	data, err := os.ReadFile(file)
	ts.Check(err)
	c, err := hostapi.NewClient(ts.MkAbs(".graft"))
	ts.Check(err)
	req := hostapi.ApplyRequest{Source: hostapi.Source{File: file, Dir: ts.MkAbs("."), YAML: string(data)}, Holder: holder}
	done := make(chan error, 1)
	go func() { done <- c.Apply(context.Background(), req, nil) }()
	ts.Defer(func() {
		<-done
		c.Close()
	})
	waitApplying(ts, true)
}
