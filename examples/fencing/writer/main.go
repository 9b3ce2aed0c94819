// Command writer is the plugin of graft's fencing example: every -every it
// posts a write to the ledger at $LEDGER_ADDR (default 127.0.0.1:7390),
// signed with the identity graft gave it (instance): its instance
// ID as owner and its generation. Once a newer generation has written, the
// ledger rejects this one's writes; the writer says so and keeps trying,
// since showing that rejection is the point of the example. It stops on
// SIGTERM or SIGINT.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/graftland/graft/instance"
)

func main() {
	every := flag.Duration("every", time.Second, "how often to write")
	key := flag.String("key", "orders", "the ledger key to write")
	flag.Parse()
	log.SetFlags(0)
	log.SetPrefix("writer: ")
	if *every <= 0 {
		log.Fatal("-every must be positive")
	}
	addr := os.Getenv("LEDGER_ADDR")
	if addr == "" {
		addr = "127.0.0.1:7390"
	}

	me := instance.Current()
	fmt.Printf("writer: instance=%s generation=%d ledger=%s\n", me.ID, me.Generation, addr)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	client := &http.Client{Timeout: 5 * time.Second}
	url := "http://" + addr + "/write"
	tick := time.NewTicker(*every)
	defer tick.Stop()
	for n := 1; ; n++ {
		fmt.Println(post(ctx, client, url, *key, me, n))
		select {
		case <-ctx.Done():
			fmt.Println("writer: stopped")
			return
		case <-tick.C:
		}
	}
}

// post writes n to the ledger and says how it went, in one line.
func post(ctx context.Context, client *http.Client, url, key string, me instance.Instance, n int) string {
	body, _ := json.Marshal(map[string]any{
		"key":        key,
		"owner":      me.ID,
		"generation": me.Generation,
		"value":      strconv.Itoa(n),
	})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return fmt.Sprintf("error: n=%d: %v", n, err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Sprintf("error: n=%d: %v", n, err)
	}
	defer resp.Body.Close()
	var answer struct {
		Error   string `json:"error"`
		Highest int64  `json:"highest"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&answer); err != nil {
		return fmt.Sprintf("error: n=%d: %s: read answer: %v", n, resp.Status, err)
	}
	switch resp.StatusCode {
	case http.StatusOK:
		return fmt.Sprintf("wrote generation=%d n=%d", me.Generation, n)
	case http.StatusConflict:
		return fmt.Sprintf("rejected: %s (n=%d)", answer.Error, n)
	}
	return fmt.Sprintf("error: n=%d: %s: %s", n, resp.Status, answer.Error)
}
