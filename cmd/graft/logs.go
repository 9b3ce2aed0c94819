package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"github.com/graftland/graft/hostapi"
	"github.com/graftland/graft/internal/output"
	"github.com/graftland/graft/internal/statedir"
	"github.com/graftland/graft/spec"
)

// LogsCmd is `graft logs PLUGIN [-f] [-n N]`.
type LogsCmd struct {
	Plugin string `arg:"" predictor:"plugin" help:"The plugin."`
	Follow bool   `short:"f" name:"follow" help:"Keep printing lines as they come, until interrupted."`
	Lines  int    `short:"n" default:"20" help:"Lines to print from the end (at most 1048576); read from the end of the log, however large."`
}

// Run prints the plugin's output from its log in the state dir: through
// the host when one runs, else from the log's files, which graft down and
// a host's end keep.
func (c *LogsCmd) Run(ctx context.Context, g *Globals) error {
	if c.Lines < 0 || c.Lines > hostapi.MaxLogLines {
		return fmt.Errorf("-n %d: want 0 to %d lines", c.Lines, hostapi.MaxLogLines)
	}
	dir := g.stateDir(g.File)
	cl, up, err := g.client(ctx, dir)
	if err != nil {
		return err
	}
	if !up {
		if g.Host != "" {
			return fmt.Errorf("%s graft logs reads a remote host's logs through it", g.noHost(dir))
		}
		return c.fromFiles(g, dir)
	}
	defer cl.Close()
	return cl.Logs(ctx, c.Plugin, c.Lines, c.Follow, g.stdout)
}

// fromFiles prints the last lines of the plugin's log in state dir dir,
// with no host to ask: nothing more comes, followed or not.
func (c *LogsCmd) fromFiles(g *Globals, dir string) error {
	if !spec.ValidPlugin(c.Plugin) {
		return fmt.Errorf("no plugin is named %q: a plugin's name has %s, and a replica's is NAME/N", c.Plugin, spec.NameRule)
	}
	s, err := output.LastOf(filepath.Join(dir, statedir.Logs, spec.PluginFileName(c.Plugin)+".log"), output.Options{}, c.Lines)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%s: no log in %s: the plugin never ran there", c.Plugin, dir)
	}
	if err != nil {
		return err
	}
	defer s.Close()
	if _, err := s.WriteTo(g.stdout); err != nil {
		return err
	}
	if c.Follow {
		fmt.Fprintf(g.stderr, "graft: %s Nothing more is written to its logs until one starts.\n", g.noHost(dir))
	}
	return nil
}
