package main

import "github.com/graftland/graft/elect"

// electionClock is the clock graft host runs its elections on: nil, real
// time, in graft itself. It is a seam for tests alone, never a flag or an
// environment variable of graft: the test binary, run as graft by the
// tests, sets it before main to show that hosts whose wall clocks disagree
// elect as any do (docs/semantics.md, "Floating plugins: the election").
var electionClock elect.Clock
