package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/graftland/graft/hostapi"
	"github.com/graftland/graft/plan"
	"github.com/graftland/graft/spec"
)

// ApplyCmd is `graft apply [FILE|PLAN]`.
type ApplyCmd struct {
	File        string `arg:"" optional:"" placeholder:"FILE|PLAN" help:"A plugins file, or a plan saved with graft plan --out (default: --file)."`
	Parallelism int    `default:"10" help:"Steps run at once at most."`
	LockTimeout string `name:"lock-timeout" placeholder:"DURATION" help:"Wait this long, such as \"30 seconds\", for an apply under way, instead of failing at once."`
}

// Run sends the spec, or the saved plan, to the project's host, starting
// one when none runs, and prints the plan and each step as it goes. It
// exits 1 when a step failed.
func (c *ApplyCmd) Run(ctx context.Context, g *Globals) error {
	file := g.fileArg(c.File)
	req, dir, err := c.request(file, g)
	if err != nil {
		return err
	}
	cl, err := ensureHost(ctx, g, dir)
	if err != nil {
		return err
	}
	defer cl.Close()
	p := newProgress(g.stdout, g.colorful(g.stdout), terminal(g.stdout))
	err = cl.Apply(ctx, req, p.On)
	p.Close()
	if ctx.Err() != nil {
		return errors.New("interrupted: the host finishes the steps under way and skips the rest; see graft status")
	}
	p.Summary(err)
	return err
}

// request reads FILE as a saved plan when it is one, else as a plugins
// file, and returns the request and the state dir it goes to.
func (c *ApplyCmd) request(file string, g *Globals) (hostapi.ApplyRequest, string, error) {
	req := hostapi.ApplyRequest{Parallelism: c.Parallelism, Holder: holder("apply")}
	if c.LockTimeout != "" {
		wait, err := positiveDuration("--lock-timeout", c.LockTimeout)
		if err != nil {
			return req, "", err
		}
		req.LockWait = wait.Milliseconds()
	}
	data, err := readInput(file)
	if err != nil {
		return req, "", err
	}
	if saved, ok := savedPlan(data); ok {
		if saved.Source == nil {
			return req, "", fmt.Errorf("%s: a plan without its source: save plans with graft plan --out", file)
		}
		if _, err := saved.Source.Spec(); err != nil {
			return req, "", err
		}
		body, err := json.Marshal(saved)
		if err != nil {
			return req, "", err
		}
		req.Source, req.Plan = hostapi.Source(*saved.Source), body
		return req, g.stateDir(filepath.Join(saved.Source.Dir, filepath.Base(saved.Source.File))), nil
	}
	s, err := g.parseSpec(file, data)
	if err != nil {
		return req, "", err
	}
	req.Source = hostapi.Source(spec.SourceOf(s))
	return req, g.stateDir(file), nil
}

// savedPlan reads data as a saved plan, if it is one.
func savedPlan(data []byte) (*plan.Plan, bool) {
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return nil, false
	}
	var probe struct {
		Format string `json:"format"`
	}
	if json.Unmarshal(trimmed, &probe) != nil || probe.Format == "" {
		return nil, false
	}
	p, err := plan.ReadJSON(bytes.NewReader(trimmed))
	if err != nil {
		return nil, false
	}
	return p, true
}

// readInput reads what graft apply is given, a plugins file or a saved
// plan, refusing one larger than the host would take.
func readInput(file string) ([]byte, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, hostapi.MaxBody+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", file, err)
	}
	if len(data) > hostapi.MaxBody {
		return nil, fmt.Errorf("%s: larger than %d MiB, the most a saved plan may be", file, hostapi.MaxBody>>20)
	}
	return data, nil
}
