//go:build linux

// Command bodybench measures the host's memory under large request
// bodies: it starts a host (the graft binary given, in a temporary state
// dir), sends it -n plans of a 4 MiB spec at once, then -n applies of a
// saved plan of one at once, each body as large as the host takes, and
// prints the host's peak RSS (VmHWM) after each wave.
//
//	go build -o /tmp/graft ./cmd/graft && go run ./bench/bodybench -graft /tmp/graft -n 8
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/graftland/graft/hostapi"
	"github.com/graftland/graft/spec"
)

func main() {
	graft := flag.String("graft", "graft", "the graft binary whose host is measured")
	n := flag.Int("n", 8, "requests sent at once, in each wave")
	flag.BoolVar(&inComment, "comment", false, "the bulk of each spec in a comment, not in a plugin's argument (which its hash covers)")
	flag.Parse()
	work, err := os.MkdirTemp("", "bodybench")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(work)

	// The plan's spec: 4 MiB, nearly all of it characters JSON writes as
	// six (\u003c), so that its body is 24 MiB. The apply's: a saved plan
	// carries its source twice (in the request and in the plan), so its
	// spec mixes the two to come near 32 MiB.
	planSrc := source(work, "plan.yaml", 0, spec.MaxSize-1024)
	savedPlan, applySrc := saved(*graft, work, 2300<<10, 1700<<10)

	state := filepath.Join(work, "state")
	host := exec.Command(*graft, "host", "--state-dir", state)
	host.Stdout, host.Stderr = os.Stderr, os.Stderr
	if err := host.Start(); err != nil {
		log.Fatal(err)
	}
	defer func() {
		host.Process.Signal(os.Interrupt)
		host.Wait()
	}()
	c, err := hostapi.NewClient(state)
	if err != nil {
		log.Fatal(err)
	}
	wait(c)
	fmt.Printf("host idle: VmHWM %s\n", hwm(host.Process.Pid))

	planBody, _ := json.Marshal(hostapi.PlanRequest{Source: planSrc})
	wave(*n, fmt.Sprintf("plan (body %.1f MiB)", mib(len(planBody))), func(ctx context.Context) error {
		_, err := c.Plan(ctx, planSrc)
		return err
	})
	fmt.Printf("after %d plans at once: VmHWM %s\n", *n, hwm(host.Process.Pid))

	applyReq := hostapi.ApplyRequest{Source: applySrc, Plan: savedPlan, LockWait: 60_000}
	applyBody, _ := json.Marshal(applyReq)
	wave(*n, fmt.Sprintf("apply (body %.1f MiB)", mib(len(applyBody))), func(ctx context.Context) error {
		return c.Apply(ctx, applyReq, func(hostapi.Message) {})
	})
	fmt.Printf("after %d applies at once: VmHWM %s\n", *n, hwm(host.Process.Pid))
}

// inComment puts the bulk of a spec in a comment.
var inComment bool

// source writes a spec of one plugin whose argument (or a comment, with
// -comment) holds escaped bytes of '<' (six bytes each in JSON) and plain
// ones of 'x'.
func source(dir, name string, plain, escaped int) hostapi.Source {
	bulk := strings.Repeat("<", escaped) + strings.Repeat("x", plain)
	yaml := "name: bodybench\nplugins:\n  big:\n    command: [/bin/sh, -c, 'exec sleep 3600', '" + bulk + "']\n"
	if inComment {
		yaml = "name: bodybench\nplugins:\n  big:\n    command: [/bin/sh, -c, 'exec sleep 3600']\n# " + bulk + "\n"
	}
	if len(yaml) > spec.MaxSize {
		log.Fatalf("spec of %d bytes: over spec.MaxSize", len(yaml))
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
		log.Fatal(err)
	}
	return hostapi.Source{File: path, Dir: dir, YAML: yaml}
}

// saved makes a saved plan of a spec with graft plan --out, without a
// host (in a project of its own), and returns it with its source.
func saved(graft, work string, escaped, plain int) (json.RawMessage, hostapi.Source) {
	dir := filepath.Join(work, "saved")
	if err := os.Mkdir(dir, 0o755); err != nil {
		log.Fatal(err)
	}
	src := source(dir, "plugins.yaml", plain, escaped)
	out := filepath.Join(dir, "plan.json")
	cmd := exec.Command(graft, "plan", "--out", out, "--state-dir", filepath.Join(dir, "state"), src.File)
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		log.Fatalf("graft plan --out: %v", err)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		log.Fatal(err)
	}
	var p struct {
		Source hostapi.Source `json:"source"`
	}
	if err := json.Unmarshal(b, &p); err != nil {
		log.Fatal(err)
	}
	return b, p.Source
}

// wave sends n requests at once and prints how they ended.
func wave(n int, what string, send func(context.Context) error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	start := time.Now()
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = send(ctx)
		}()
	}
	wg.Wait()
	ok := 0
	for _, err := range errs {
		if err == nil {
			ok++
		} else {
			fmt.Printf("  %s: %v\n", what, firstLine(err))
		}
	}
	fmt.Printf("%d × %s: %d ok in %v\n", n, what, ok, time.Since(start).Round(time.Millisecond))
}

func firstLine(err error) string {
	s, _, _ := strings.Cut(err.Error(), "\n")
	if len(s) > 200 {
		s = s[:200] + "..."
	}
	return s
}

// wait waits for the host to answer.
func wait(c *hostapi.Client) {
	for range 200 {
		if _, err := c.Status(context.Background()); err == nil {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	log.Fatal("the host did not answer")
}

// hwm is the peak RSS of process pid, from /proc/PID/status.
func hwm(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return err.Error()
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			return strings.TrimSpace(v)
		}
	}
	return "?"
}

func mib(n int) float64 { return float64(n) / (1 << 20) }
