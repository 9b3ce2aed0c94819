// Command loadgen sends GET requests over loopback for a while and
// prints how many failed and the latency percentiles (internal/loadgen):
// what bench/deploy.sh measures a replacement under load with.
//
//	loadgen -url http://127.0.0.1:8080/ -for 5s [-clients 4] [-keepalive] [-json]
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/graftland/graft/internal/loadgen"
)

func main() {
	url := flag.String("url", "", "the URL to GET")
	d := flag.Duration("for", 5*time.Second, "how long to send")
	clients := flag.Int("clients", 4, "clients sending at once")
	keep := flag.Bool("keepalive", false, "keep each client's connection (default: a new one each request)")
	asJSON := flag.Bool("json", false, "print the result as JSON")
	flag.Parse()
	if *url == "" {
		fmt.Fprintln(os.Stderr, "loadgen: -url is required")
		os.Exit(2)
	}
	ctx, cancel := context.WithTimeout(context.Background(), *d)
	defer cancel()
	res := loadgen.Run(ctx, loadgen.Options{URL: *url, Clients: *clients, KeepAlive: *keep})
	if *asJSON {
		json.NewEncoder(os.Stdout).Encode(res)
		return
	}
	fmt.Println(res)
}
