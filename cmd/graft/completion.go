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
	"zsh":  "autoload -U +X bashcompinit && bashcompinit\ncomplete -o default -C %[1]s %[2]s\n",
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
func answerCompletion(parser *kong.Kong, exit func(int)) {
	kongplete.Complete(parser,
		kongplete.WithPredictor("plugin", complete.PredictFunc(predictPlugins)),
		kongplete.WithExitFunc(exit),
		kongplete.WithErrorHandler(func(error) {}),
	)
}

// predictPlugins lists the plugins of the plugins file the command line
// names (--file FILE or --file=FILE, before or after the command), else
// of plugins.yaml. It reads only the names, so that a file with a problem
// elsewhere still completes, but only names a plugin may have; a file
// that cannot be read completes nothing.
func predictPlugins(complete.Args) []string {
	line := os.Getenv("COMP_LINE")
	if point, err := strconv.Atoi(os.Getenv("COMP_POINT")); err == nil && point >= 0 && point < len(line) {
		line = line[:point] // the words before the cursor
	}
	data, err := spec.Read(completionFile(line))
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
	for name := range doc.Plugins {
		// A name that is not a plugin's (an escape sequence, a $(…))
		// would be put on the command line as it is: it is left out.
		if spec.ValidName(name) {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
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
