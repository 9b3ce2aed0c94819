package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/alecthomas/kong"
	"github.com/posener/complete"
	"github.com/willabides/kongplete"
	"gopkg.in/yaml.v3"

	"github.com/graftland/graft/spec"
)

// CompletionCmd is `graft completion bash|zsh|fish`.
type CompletionCmd struct {
	Shell string `arg:"" enum:"bash,zsh,fish" help:"The shell: bash, zsh or fish."`
}

// completionScripts hook graft into each shell's completion: the shell
// runs graft itself with the command line in COMP_LINE (and COMP_POINT),
// and graft prints the words that fit (kongplete, in answerCompletion below).
// %[1]s is graft's path, quoted for the shell; %[2]s the command's name.
var completionScripts = map[string]string{
	"bash": "complete -o default -C %[1]s %[2]s\n",
	// zsh's complete (bashcompinit) needs compinit's compdef: a zsh
	// whose rc has not run compinit (zsh -f) gets it first.
	"zsh": "(( ${+functions[compdef]} )) || { autoload -U +X compinit && compinit }\nautoload -U +X bashcompinit && bashcompinit\ncomplete -o default -C %[1]s %[2]s\n",
	"fish": `function __complete_%[2]s
    set -lx COMP_LINE (commandline -cp)
    test -z (commandline -ct)
    and set COMP_LINE "$COMP_LINE "
    %[1]s
end
complete -f -c %[2]s -a "(__complete_%[2]s)"
`,
}

// Run prints the script that makes the shell complete graft's commands,
// flags and, for the commands that take plugins, the names of the plugins
// of the plugins file (--file, else plugins.yaml). Load it with
// `source <(graft completion bash)`, or in fish with
// `graft completion fish | source`.
func (c *CompletionCmd) Run(g *Globals) error {
	bin, err := selfPath()
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(g.stdout, completionScripts[c.Shell], shellQuote(bin), "graft")
	return err
}

// selfPath is how the shell can run this graft again: the path it was
// run by, made absolute, or the one PATH finds for its name. Its links
// are not followed, so the program is run by the same name.
func selfPath() (string, error) {
	if strings.ContainsRune(os.Args[0], filepath.Separator) {
		return filepath.Abs(os.Args[0])
	}
	if p, err := exec.LookPath(os.Args[0]); err == nil {
		return filepath.Abs(p)
	}
	return os.Executable()
}

// shellQuote quotes s for bash, zsh and fish alike: in single quotes,
// each single quote closed, escaped and reopened.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// answerCompletion answers the shell when it asks for completions (COMP_LINE is
// set, see completionScripts), and returns without doing anything when it
// does not.
//
// graft's global flags may come after the command (graft logs --file
// x.yaml), where kongplete, which knows a command's own flags alone,
// would count them and their values as the command's arguments: the
// words of COMP_LINE it reads are those with the global flags that are
// done (not the word under the cursor) left out. predictPlugins reads
// the whole line.
func answerCompletion(parser *kong.Kong, exit func(int)) {
	if line, ok := os.LookupEnv("COMP_LINE"); ok {
		os.Setenv(completionLineEnv, line)
		short := withoutGlobalFlags(parser, beforeCursor(line))
		os.Setenv("COMP_LINE", short)
		os.Setenv("COMP_POINT", strconv.Itoa(len(short)))
	}
	kongplete.Complete(parser,
		kongplete.WithPredictor("plugin", complete.PredictFunc(predictPlugins)),
		kongplete.WithExitFunc(exit),
		kongplete.WithErrorHandler(func(error) {}),
	)
}

// predictPlugins lists the plugins of the plugins file the command line
// names (--file FILE or --file=FILE, before or after the command), else
// of plugins.yaml, and the replicas of those that have replicas. It reads
// only the names and counts, so that a file with a problem
// elsewhere still completes, but only names a plugin may have; a file
// that cannot be read completes nothing.
func predictPlugins(complete.Args) []string {
	data, err := spec.Read(completionFile(os.Getenv(completionLineEnv)))
	if err != nil {
		return nil
	}
	var doc struct {
		Plugins map[string]yaml.Node `yaml:"plugins"`
	}
	if yaml.Unmarshal(data, &doc) != nil {
		return nil
	}
	names := make([]string, 0, len(doc.Plugins))
	for name, node := range doc.Plugins {
		// A name that is not a plugin's (an escape sequence, a $(…))
		// would be put on the command line as it is: it is left out.
		if !spec.ValidName(name) {
			continue
		}
		names = append(names, name)
		// Its replicas too, for graft logs api/2.
		var p struct {
			Replicas int `yaml:"replicas"`
		}
		if node.Decode(&p) == nil && p.Replicas <= spec.MaxReplicas {
			for i := 1; i <= p.Replicas; i++ {
				names = append(names, spec.ReplicaName(name, i))
			}
		}
	}
	slices.Sort(names)
	return names
}

// completionLineEnv keeps the command line as the shell gave it, for
// predictPlugins, while kongplete reads COMP_LINE without the global
// flags.
const completionLineEnv = "GRAFT_COMPLETION_LINE"

// beforeCursor is the words of line before the cursor (COMP_POINT).
func beforeCursor(line string) string {
	if point, err := strconv.Atoi(os.Getenv("COMP_POINT")); err == nil && point >= 0 && point < len(line) {
		return line[:point]
	}
	return line
}

// withoutGlobalFlags is line with the global flags (graft's own, such as
// --file FILE, --file=FILE, --tls) that follow its first word and are
// done left out, with their values: the word being completed, the last,
// stays, and so does a flag whose value it is.
func withoutGlobalFlags(parser *kong.Kong, line string) string {
	valued := map[string]bool{} // flag names, and whether each takes a value
	for _, f := range parser.Model.Node.Flags {
		takes := !f.IsBool()
		valued["--"+f.Name] = takes
		if f.Short != 0 {
			valued["-"+string(f.Short)] = takes
		}
	}
	words := strings.Fields(line)
	last := ""
	if !strings.HasSuffix(line, " ") && len(words) > 0 {
		last, words = words[len(words)-1], words[:len(words)-1]
	}
	kept := words[:0:0]
	for i := 0; i < len(words); i++ {
		name, _, hasValue := strings.Cut(words[i], "=")
		takes, global := valued[name]
		switch {
		case i == 0 || !global:
			kept = append(kept, words[i])
		case takes && !hasValue && i+1 == len(words):
			kept = append(kept, words[i]) // its value is the word being completed
		case takes && !hasValue:
			i++ // its value goes with it
		}
	}
	return strings.Join(append(kept, last), " ")
}

// completionFile is the plugins file a command line being completed
// names. The whole line is read: the arguments kongplete hands a
// predictor are only those after the command.
func completionFile(line string) string {
	file := "plugins.yaml"
	words := strings.Fields(line)
	for i, w := range words {
		if v, ok := strings.CutPrefix(w, "--file="); ok {
			file = v
		} else if w == "--file" && i+1 < len(words) {
			file = words[i+1]
		}
	}
	return file
}
