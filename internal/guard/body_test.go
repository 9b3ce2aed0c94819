package guard

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// decodeOrAnswer decodes r's body as JSON into v, as it comes, and answers
// a body the guard cut with the guard's answer, as the daemons' handlers
// do.
func decodeOrAnswer(w http.ResponseWriter, r *http.Request, v any) bool {
	err := json.NewDecoder(r.Body).Decode(v)
	var cut *BodyError
	switch {
	case err == nil:
		return true
	case errors.As(err, &cut):
		cut.Write(w)
	default:
		http.Error(w, err.Error(), http.StatusBadRequest)
	}
	return false
}

// bigJSON is a JSON object of about n bytes.
func bigJSON(n int) string { return `{"a":"` + strings.Repeat("x", n) + `"}` }

// TestLargeBodiesTakeTurns: a body over LargeBody reaches its handler
// before it has all come (it is decoded as it streams, not read whole
// first); while one large request has its turn, the next is neither read
// nor decoded; once the first handler says Done (its body decoded and
// parsed), the next has its turn though the first has not answered yet.
func TestLargeBodiesTakeTurns(t *testing.T) {
	entered := make(chan string, 4)
	hold := make(chan struct{})
	var decoding, most atomic.Int64
	s := serve(t, Config{MaxBody: 4 << 20}, func(w http.ResponseWriter, r *http.Request) {
		n := decoding.Add(1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		entered <- r.URL.Path
		var v struct{ A string }
		ok := decodeOrAnswer(w, r, &v)
		decoding.Add(-1)
		Done(r)
		if ok {
			<-hold // a long apply, after its spec is parsed
			fmt.Fprint(w, len(v.A))
		}
	})
	body := bigJSON(2 << 20)
	first := dial(t, s)
	fmt.Fprintf(first, "POST /first HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", len(body))
	_, err := io.WriteString(first, body[:3<<19])
	require.NoError(t, err)
	select {
	case p := <-entered:
		assert.Equal(t, "/first", p)
	case <-time.After(10 * time.Second):
		t.Fatal("the handler was not called before the body had all come: the body was read whole first")
	}
	assert.Equal(t, int64(1), LargeTurns())

	second := make(chan int, 1)
	go func() {
		status, _ := doQuiet(s.url+"/second", []byte(body))
		second <- status
	}()
	select {
	case p := <-entered:
		t.Fatalf("%s was decoded while /first had its turn", p)
	case <-time.After(300 * time.Millisecond):
	}

	_, err = io.WriteString(first, body[3<<19:])
	require.NoError(t, err)
	select {
	case p := <-entered:
		assert.Equal(t, "/second", p, "its turn came once /first was decoded, before /first answered")
	case <-time.After(10 * time.Second):
		t.Fatal("the second large request never had its turn while the first, decoded, went on")
	}
	close(hold)
	resp, err := http.ReadResponse(bufio.NewReader(first), nil)
	require.NoError(t, err)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, fmt.Sprint(2<<20), string(b))
	select {
	case status := <-second:
		assert.Equal(t, 200, status)
	case <-time.After(10 * time.Second):
		t.Fatal("the second large request was never answered")
	}
	assert.Equal(t, int64(1), most.Load(), "large bodies were decoded one at a time")
	assert.Zero(t, LargeTurns(), "every turn ended")
}

// TestLargeBodyOverLimit: a large body over MaxBody that did not say its
// length is cut as its handler decodes it, and answered 413 naming the
// limit; one that says a length over the limit never reaches a handler.
func TestLargeBodyOverLimit(t *testing.T) {
	s := serve(t, Config{MaxBody: 2 << 20}, func(w http.ResponseWriter, r *http.Request) {
		var v struct{ A string }
		if decodeOrAnswer(w, r, &v) {
			t.Error("a body over the limit was decoded")
		}
	})
	// Chunked: its length is unknown until it has come.
	status, answer := do(t, "POST", s.url+"/x", io.MultiReader(strings.NewReader(bigJSON(3<<20))), "Content-Type", "application/json")
	assert.Equal(t, http.StatusRequestEntityTooLarge, status)
	assert.Contains(t, answer, "the test refused the request: its body is over 2 MiB")
	assert.Equal(t, KindTooLarge, kindOf(t, answer))
	assert.Equal(t, int64(1), s.runs.Load())

	c := dial(t, s)
	fmt.Fprintf(c, "POST /x HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", 3<<20)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	require.NoError(t, err)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode)
	assert.Contains(t, string(b), "its body is over 2 MiB")
	assert.Equal(t, int64(1), s.runs.Load(), "refused before the handler")
	assert.Zero(t, LargeTurns())
}

// TestLargeBodyWaitsBounded: a large request waits for its turn at most
// the body timeout, then is refused, saying why.
func TestLargeBodyWaitsBounded(t *testing.T) {
	hold := make(chan struct{})
	entered := make(chan struct{}, 2)
	s := serve(t, Config{MaxBody: 4 << 20, Limits: Limits{BodyTimeout: 500 * time.Millisecond}}, func(w http.ResponseWriter, r *http.Request) {
		var v struct{ A string }
		if decodeOrAnswer(w, r, &v) {
			entered <- struct{}{}
			<-hold // parses for ever, and never says Done
		}
	})
	body := []byte(bigJSON(2 << 20))
	first := make(chan int, 1)
	go func() {
		status, _ := doQuiet(s.url+"/first", body)
		first <- status
	}()
	<-entered
	start := time.Now()
	status, answer := do(t, "POST", s.url+"/second", bytes.NewReader(body), "Content-Type", "application/json")
	waited := time.Since(start)
	close(hold)
	assert.Equal(t, http.StatusRequestTimeout, status)
	assert.Contains(t, answer, "the test refused the request: it waited 500ms for its turn to be read (a body over 1 MiB is read and parsed one at a time, and others were)")
	assert.Less(t, waited, 10*time.Second)
	assert.Equal(t, 200, <-first)
}
