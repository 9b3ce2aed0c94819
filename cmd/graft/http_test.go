package main

import (
	"io"
	"net/http"
	"regexp"
	"strconv"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
)

// httpget URL REGEXP [SECONDS] waits until a GET of URL answers 200 with
// a body matching REGEXP, at most SECONDS (default 20): a plugin that
// serves HTTP serves what its new config says.
func cmdHTTPGet(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 || len(args) > 3 {
		ts.Fatalf("usage: httpget url regexp [seconds]")
	}
	re, err := regexp.Compile(args[1])
	ts.Check(err)
	wait := 20 * time.Second
	if len(args) == 3 {
		s, err := strconv.Atoi(args[2])
		ts.Check(err)
		wait = time.Duration(s) * time.Second
	}
	client := &http.Client{Timeout: 2 * time.Second}
	deadline := time.Now().Add(wait)
	last := ""
	for {
		resp, err := client.Get(args[0])
		if err == nil {
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
			resp.Body.Close()
			last = resp.Status + ": " + string(body)
			if resp.StatusCode == http.StatusOK && re.Match(body) {
				return
			}
		} else {
			last = err.Error()
		}
		if time.Now().After(deadline) {
			ts.Fatalf("GET %s: no body matching %q in %v; last: %s", args[0], args[1], wait, last)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
