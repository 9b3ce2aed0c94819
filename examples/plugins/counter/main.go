// Command counter counts up in the kv store every interval, the consumer
// in graft's quickstart: it needs kv running before it starts, and stops
// before kv does.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/graftland/graft/instance"
)

func main() {
	every := flag.Duration("every", time.Second, "how often to count")
	flag.Parse()
	// KV_ADDR names a kv server; GRAFT_ADDR_KV is set by graft when kv
	// is a floating plugin: the address of whichever host leads it.
	kv := os.Getenv("KV_ADDR")
	if kv == "" {
		kv = os.Getenv("GRAFT_ADDR_KV")
	}
	if kv == "" {
		log.Fatal("counter: neither KV_ADDR nor GRAFT_ADDR_KV is set")
	}
	name := os.Getenv("COUNTER_NAME")
	if name == "" {
		name = "visits"
	}
	url := fmt.Sprintf("http://%s/kv/%s", kv, name)
	me := instance.Current()
	log.Printf("counter: instance %s, generation %d", me.ID, me.Generation)

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	tick := time.NewTicker(*every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			log.Print("counter: stopped")
			return
		case <-tick.C:
		}
		n, err := next(url)
		if err != nil {
			log.Printf("counter: %v", err)
			continue
		}
		log.Printf("counter: %s = %d", name, n)
	}
}

// next reads the counter, adds one and writes it back.
func next(url string) (int, error) {
	n := 0
	resp, err := http.Get(url)
	if err != nil {
		return 0, err
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode == http.StatusOK {
		n, _ = strconv.Atoi(strings.TrimSpace(string(body)))
	}
	n++
	req, err := http.NewRequest(http.MethodPut, url, strings.NewReader(strconv.Itoa(n)))
	if err != nil {
		return 0, err
	}
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return n, nil
}
