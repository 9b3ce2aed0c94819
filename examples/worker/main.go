// Command worker is graft's example worker plugin: a WebAssembly (WASI
// preview 1) module that runs inside the host. Build it with
//
//	GOOS=wasip1 GOARCH=wasm go build -o examples/worker/worker.wasm ./examples/worker
//
// Its small job: every -every it hashes the next block of a counter and
// writes the running digest to -out (a file in a writable mount), so its
// consumer can read it. It reads who it is with instance, and
// stops when its stdin ends, which is how graft asks a worker to stop.
package main

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/graftland/graft/instance"
)

func main() {
	every := flag.Duration("every", 500*time.Millisecond, "how often to work")
	out := flag.String("out", "", "the file the digest is written to (in a writable mount)")
	flag.Parse()

	me := instance.Current()
	fmt.Printf("worker: instance %s, generation %d\n", me.ID, me.Generation)

	// graft closes stdin to stop a worker: watch for its end.
	stop := make(chan struct{})
	go func() {
		io.Copy(io.Discard, os.Stdin)
		close(stop)
	}()

	h := sha256.New()
	tick := time.NewTicker(*every)
	defer tick.Stop()
	for n := uint64(1); ; n++ {
		select {
		case <-stop:
			fmt.Println("worker: stdin ended, stopping")
			return
		case <-tick.C:
		}
		var block [8]byte
		binary.BigEndian.PutUint64(block[:], n)
		h.Write(block[:])
		digest := hex.EncodeToString(h.Sum(nil))[:16]
		fmt.Printf("worker: block %d, digest %s\n", n, digest)
		if *out != "" {
			if err := os.WriteFile(*out, []byte(fmt.Sprintf("%d %s\n", n, digest)), 0o644); err != nil {
				fmt.Println("worker:", err)
			}
		}
	}
}
