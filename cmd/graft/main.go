// Command graft keeps long-running processes in the state a YAML file
// declares. This package parses flags, calls into graft's packages and
// prints; it decides nothing of its own.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/alecthomas/kong"

	"github.com/graftland/graft/internal/proc"
	"github.com/graftland/graft/internal/termtext"
	"github.com/graftland/graft/spec"
)

// CLI is graft's command line.
type CLI struct {
	Globals

	Apply    ApplyCmd    `cmd:"" help:"Bring about a plugins file, or a saved plan: start, stop, replace and restart plugins in order."`
	Plan     PlanCmd     `cmd:"" help:"Show what graft apply would start, stop, replace and restart."`
	Status   StatusCmd   `cmd:"" help:"Show what runs."`
	Logs     LogsCmd     `cmd:"" help:"Print a plugin's output."`
	Restart  RestartCmd  `cmd:"" help:"Replace plugins, and restart their consumers, in order."`
	Run      RunCmd      `cmd:"" help:"Run a one-shot plugin (once: true) again, planned like a restart."`
	Leader   LeaderCmd   `cmd:"" help:"Show which host leads a floating plugin: holder, address, epoch and how fresh its lease is."`
	Down     DownCmd     `cmd:"" help:"Stop every plugin, consumers first, and the host."`
	Upgrade  UpgradeCmd  `cmd:"" help:"Replace the running host's program with a new graft, its local plugins running on untouched."`
	Validate ValidateCmd `cmd:"" help:"Check a plugins file and report every problem in it."`
	Host     HostCmd     `cmd:"" help:"Run the host daemon in the foreground (graft apply starts one in the background)."`
	Runner   RunnerCmd   `cmd:"" help:"Run a runner: the daemon that runs remote plugins for hosts, under leases. SIGHUP executes its program again, from its path, its processes running on untouched."`
	Schema   SchemaCmd   `cmd:"" help:"Print the JSON Schema of plugins.yaml."`
	Version  VersionCmd  `cmd:"" help:"Print graft's version."`

	Completion CompletionCmd `cmd:"" help:"Print the script that makes bash, zsh or fish complete graft's commands, flags and plugin names: source <(graft completion bash)."`
}

// Globals are the flags every command takes.
type Globals struct {
	File      string `default:"plugins.yaml" placeholder:"FILE" help:"The plugins file, whose directory holds the state dir (default: plugins.yaml)."`
	StateDir  string `name:"state-dir" env:"GRAFT_STATE_DIR" placeholder:"DIR" help:"Directory of the host's state (default: .graft/ beside the plugins file)."`
	Host      string `name:"host" env:"GRAFT_HOST" placeholder:"tcp://HOST:PORT" help:"Talk to a host over TCP (one started with graft host --listen), with its --token-file, instead of through the state dir's socket."`
	TokenFile string `name:"token-file" env:"GRAFT_TOKEN_FILE" placeholder:"FILE" help:"The bearer token of a host over TCP: sent by clients, required by graft host --listen and graft runner --listen tcp://."`
	TLS       bool   `name:"tls" env:"GRAFT_TLS" help:"Talk to --host over TLS, trusting the system's CAs (implied by --tls-ca, --tls-client-cert)."`
	TLSCA     string `name:"tls-ca" env:"GRAFT_TLS_CA" placeholder:"FILE" help:"Talk to --host over TLS, trusting the CAs in FILE (PEM) to have signed its certificate."`
	TLSCert   string `name:"tls-client-cert" env:"GRAFT_TLS_CLIENT_CERT" placeholder:"FILE" help:"The client certificate (PEM) to show --host, for a host started with --client-ca; needs --tls-client-key."`
	TLSKey    string `name:"tls-client-key" env:"GRAFT_TLS_CLIENT_KEY" placeholder:"FILE" help:"The key of --tls-client-cert (PEM)."`
	Plaintext bool   `name:"insecure-plaintext" env:"GRAFT_INSECURE_PLAINTEXT" help:"Allow plain TCP beyond loopback, to --host and on graft host --listen and graft runner --listen: the token crosses the network in the clear."`
	Color     string `enum:"auto,always,never" default:"auto" help:"Colour output: auto (on a terminal, unless NO_COLOR is set), always or never."`

	stdout, stderr io.Writer
	noted          bool // the note of an older host was printed (noteOlderHost)
}

// exitCode is an error that only sets the exit status, such as 2 from
// `graft plan --detailed-exitcode` when there are changes.
type exitCode int

func (e exitCode) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run executes graft with args and returns the exit status: 0 on success,
// 1 on any error, including a usage error (2 is kept for "changes" under
// --detailed-exitcode, so CI never mistakes a typo for a plan).
func run(args []string, stdout, stderr io.Writer) int {
	ctx, stop := interruptible()
	defer stop()

	cli := CLI{Globals: Globals{stdout: stdout, stderr: stderr}}
	parser, err := kong.New(&cli,
		kong.Name("graft"),
		kong.Description("graft keeps long-running processes (plugins) in the state plugins.yaml declares."),
		kong.Writers(stdout, stderr),
		kong.ConfigureHelp(kong.HelpOptions{Compact: true}),
		kong.Exit(func(code int) { panic(exitCode(code)) }),
		kong.BindTo(ctx, (*context.Context)(nil)),
	)
	if err != nil {
		panic(err) // the CLI struct is wrong: a bug, not a user error
	}
	code := func() (code int) {
		// kong exits after printing --help; turn that into a return.
		defer func() {
			if r := recover(); r != nil {
				c, ok := r.(exitCode)
				if !ok {
					panic(r)
				}
				code = int(c)
			}
		}()
		answerCompletion(parser, func(code int) { panic(exitCode(code)) })
		kctx, err := parser.Parse(args)
		if err != nil {
			fmt.Fprintf(stderr, "graft: %s\n", termtext.Text(err.Error()))
			if pe := (*kong.ParseError)(nil); errors.As(err, &pe) {
				fmt.Fprintln(stderr, "Try: graft --help")
			}
			return 1
		}
		return report(stderr, kctx.Run(&cli.Globals))
	}()
	return code
}

// report prints err for people and returns the exit status for it. An
// error may come from a host, perhaps over TCP, and hold a plugin's last
// output or an apply's holder, free text: what a terminal would act on is
// escaped, lines kept.
func report(stderr io.Writer, err error) int {
	if err == nil {
		return 0
	}
	if c := exitCode(0); errors.As(err, &c) {
		return int(c)
	}
	// Problems in a plugins file are printed one per line, each starting
	// with file:line:col, so editors and CI annotate them.
	if errs := (spec.Errors)(nil); errors.As(err, &errs) {
		fmt.Fprintln(stderr, termtext.Text(errs.Error()))
		fmt.Fprintf(stderr, "graft: %s: %d %s\n", termtext.Line(errs[0].File), len(errs), map[bool]string{true: "problem", false: "problems"}[len(errs) == 1])
		return 1
	}
	fmt.Fprintf(stderr, "graft: %s\n", termtext.Text(err.Error()))
	var h interface{ Hint() string }
	if errors.As(err, &h) && h.Hint() != "" {
		fmt.Fprintf(stderr, "Try: %s\n", termtext.Line(h.Hint()))
	}
	return 1
}

// interruptible is the context of a command: cancelled by the first
// SIGINT or SIGTERM, which a command takes as its cue to end gracefully
// (an apply lets its steps under way finish and skips the rest); a second
// one ends graft at once, whatever it was doing, with the status a shell
// gives a process that signal killed (130, 143).
func interruptible() (context.Context, func()) {
	ctx, cancel := context.WithCancel(context.Background())
	sigs, done := make(chan os.Signal, 2), make(chan struct{})
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		for n := 0; ; n++ {
			select {
			case s := <-sigs:
				if n == 0 {
					cancel()
					continue
				}
				code := 128 + int(syscall.SIGINT)
				if sig, ok := s.(syscall.Signal); ok {
					code = 128 + int(sig)
				}
				proc.EndNamespaces() // what it runs ends with it: it is not a crash
				os.Exit(code)
			case <-done:
				return
			}
		}
	}()
	return ctx, func() { signal.Stop(sigs); close(done); cancel() }
}
