// Command writer claims its identity in a ledger, as a plugin fenced by
// generation would (docs/semantics.md, "Fencing"): it reads who it is with
// instance and appends "owner=ID generation=N" to the ledger file, then
// runs until SIGTERM. Started by graft it is a fresh UUID and generation 1
// locally, or its instance name and a growing generation through a runner;
// started by hand it is "local", generation 0.
//
// An external system that keeps the highest generation it has seen, and
// refuses claims from lower ones, fences off a slow old copy (see
// fence).
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"syscall"

	"github.com/graftland/graft/instance"
)

func main() {
	ledger := flag.String("ledger", "ledger.txt", "the file claims are appended to")
	once := flag.Bool("once", false, "claim and exit, instead of running until SIGTERM")
	flag.Parse()

	me := instance.Current()
	claim := fmt.Sprintf("owner=%s generation=%d", me.ID, me.Generation)
	f, err := os.OpenFile(*ledger, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		log.Fatal(err)
	}
	if _, err := fmt.Fprintln(f, claim); err != nil {
		log.Fatal(err)
	}
	if err := f.Close(); err != nil {
		log.Fatal(err)
	}
	log.Printf("writer: claimed %s", claim)
	if *once {
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	<-ctx.Done()
	log.Print("writer: stopped")
}
