// Command ledger is the external system of graft's fencing example: an
// HTTP service that accepts a write only if its generation is at least the
// highest it has seen for the write's key (fence), so a slow old
// copy of a plugin cannot overwrite what its replacement wrote.
//
//	POST /write   {"key": "orders", "owner": "fencing.writer", "generation": 3, "value": "n=5"}
//	              200 {"ok": true}, or 409 {"error": "stale generation ...", "highest": 4}
//	GET  /writes  the accepted writes, oldest first
//	GET  /healthz ok
//
// The highest generations are kept in the -file ledger and survive a
// restart; the list of accepted writes is kept in memory only. It prints
// one line per write, accepted or rejected, and stops on SIGTERM or
// SIGINT.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/graftland/graft/fence"
)

// write is one write, as posted and as listed.
type write struct {
	Key        string `json:"key"`
	Owner      string `json:"owner"`
	Generation int64  `json:"generation"`
	Value      string `json:"value"`
}

type server struct {
	ledger *fence.Ledger

	// mu makes admitting a write and recording it one step, so that the
	// list is in the order of admission.
	mu     sync.Mutex
	writes []write
}

func main() {
	addr := flag.String("listen", "127.0.0.1:7390", "address to listen on")
	path := flag.String("file", "ledger.json", "the file the highest generations are kept in")
	flag.Parse()
	log.SetFlags(0)
	log.SetPrefix("ledger: ")
	if err := run(*addr, *path); err != nil {
		log.Fatal(err)
	}
}

func run(addr, path string) error {
	ledger, err := fence.Open(path)
	if err != nil {
		return err
	}
	defer ledger.Close()
	s := &server{ledger: ledger}

	mux := http.NewServeMux()
	mux.HandleFunc("POST /write", s.write)
	mux.HandleFunc("GET /writes", s.list)
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "ok\n")
	})

	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	done := make(chan error, 1)
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		done <- srv.Shutdown(shutdown)
	}()
	// The address actually listened on: with port 0, the one the system chose.
	log.Printf("listening on %s", ln.Addr())
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	if err := <-done; err != nil {
		return err
	}
	log.Print("stopped")
	return nil
}

func (s *server) write(w http.ResponseWriter, r *http.Request) {
	var wr write
	dec := json.NewDecoder(io.LimitReader(r.Body, 1<<20))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&wr); err != nil {
		answer(w, http.StatusBadRequest, map[string]any{"error": "read write: " + err.Error()})
		return
	}
	if wr.Key == "" {
		answer(w, http.StatusBadRequest, map[string]any{"error": "a write needs a key"})
		return
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	err := s.ledger.Admit(wr.Key, wr.Generation)
	var stale *fence.StaleError
	switch {
	case err == nil:
		s.writes = append(s.writes, wr)
		fmt.Printf("accepted key=%s owner=%s generation=%d value=%q\n", wr.Key, wr.Owner, wr.Generation, wr.Value)
		answer(w, http.StatusOK, map[string]any{"ok": true})
	case errors.As(err, &stale):
		fmt.Printf("rejected key=%s owner=%s generation=%d highest=%d\n", wr.Key, wr.Owner, wr.Generation, stale.Highest)
		answer(w, http.StatusConflict, map[string]any{"error": err.Error(), "highest": stale.Highest})
	default:
		fmt.Printf("failed key=%s owner=%s generation=%d: %v\n", wr.Key, wr.Owner, wr.Generation, err)
		answer(w, http.StatusInternalServerError, map[string]any{"error": err.Error()})
	}
}

func (s *server) list(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	writes := append([]write{}, s.writes...)
	s.mu.Unlock()
	answer(w, http.StatusOK, writes)
}

func answer(w http.ResponseWriter, status int, body any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(body)
}
