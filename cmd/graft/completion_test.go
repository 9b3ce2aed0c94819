//go:build linux

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graftland/graft/internal/testprog"
)

// TestCompletionBash: the script of graft completion bash, loaded into an
// interactive bash, completes the commands that take plugins with the
// names of the plugins file (--file's when given), on Tab as a user
// presses it. (TestCompletionScripts checks the scripts' text and the
// answer graft gives to COMP_LINE; bash's compgen cannot drive a -C
// completion, as it runs the command with COMP_LINE empty, so a real
// interactive bash in tmux does.)
func TestCompletionBash(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644))
	}
	write("plugins.yaml", "name: shop\nplugins:\n  web: {command: [w]}\n  worker: {command: [x]}\n  db: {command: [d]}\n")
	write("other.yaml", "name: other\nplugins:\n  queue: {command: [q]}\n  quota: {command: [q]}\n")
	tm := newTmux(t, dir)
	tm.send("t", "source <(graft completion bash)", "Enter")
	tm.send("t", "complete -p graft", "Enter")
	tm.waitFor("t", regexp.MustCompile(`complete -o default -C '/\S+/graft' graft`), 10*time.Second)

	// Each try begins on a clear screen with an empty prompt, once the
	// last one's keys have all been read.
	fresh := func() {
		tm.send("t", "C-e", "C-u") // readline: the line is dropped, keys typed ahead kept
		tm.send("t", "clear", "Enter")
		tm.waitFor("t", regexp.MustCompile(`\A\$\s*\z`), 10*time.Second)
	}
	// Two Tabs list the plugins; one completes a prefix that fits one.
	fresh()
	tm.send("t", "graft logs ", "Tab", "Tab")
	tm.waitFor("t", regexp.MustCompile(`(?m)^db\s+web\s+worker\s*$`), 10*time.Second)
	fresh()
	tm.send("t", "graft restart web wo", "Tab")
	tm.waitFor("t", regexp.MustCompile(`(?m)^\$ graft restart web worker\s*$`), 10*time.Second)
	fresh()
	tm.send("t", "graft --file other.yaml leader qu", "Tab", "Tab")
	screen := tm.waitFor("t", regexp.MustCompile(`(?m)^queue\s+quota\s*$`), 10*time.Second)
	assert.NotContains(t, screen, "worker", "names come from --file's plugins file")
}

// TestCompletionScripts: each shell's script runs graft by its path,
// quoted for the shell, so a path with a space or a quote in it still
// works; bash runs the command of its script as it runs it on Tab.
func TestCompletionScripts(t *testing.T) {
	testprog.Need(t, "bash", "bash")
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "plugins.yaml"), []byte("name: shop\nplugins:\n  web: {command: [w]}\n"), 0o644))
	for shell, want := range map[string]string{
		"bash": `^complete -o default -C '/\S+/graft' graft\n\z`,
		"zsh":  `\A\(\( \$\{\+functions\[compdef\]\} \)\) \|\| \{ autoload -U \+X compinit && compinit \}\nautoload -U \+X bashcompinit && bashcompinit\ncomplete -o default -C '/\S+/graft' graft\n\z`,
		"fish": `(?s)\Afunction __complete_graft\n.*\n    '/\S+/graft'\nend\ncomplete -f -c graft -a "\(__complete_graft\)"\n\z`,
	} {
		out, err := exec.Command("graft", "completion", shell).Output()
		require.NoError(t, err, shell)
		assert.Regexp(t, regexp.MustCompile(want), string(out), shell)
	}
	weird := "/tmp/it's a \"dir\" $HOME `x`/graft"
	out, err := exec.Command("bash", "-c", "printf %s "+shellQuote(weird)).Output()
	require.NoError(t, err)
	assert.Equal(t, weird, string(out), "the path is quoted for the shell")

	script, err := exec.Command("graft", "completion", "bash").Output()
	require.NoError(t, err)
	for _, command := range []string{"logs", "restart", "leader", "run"} {
		line := "graft " + command + " "
		cmd := exec.Command("bash", "--norc", "--noprofile", "-c", string(script)+`
spec=$(complete -p graft)
eval "set -- ${spec#complete -o default -C }"
COMP_LINE="`+line+`" COMP_POINT=`+strconv.Itoa(len(line))+` "$1"`)
		cmd.Dir = dir
		out, err = cmd.CombinedOutput()
		require.NoError(t, err, string(out))
		assert.Equal(t, "web\n", string(out), "graft %s completes the plugin names", command)
	}
}

// TestCompletionDropsBadNames: names a plugin may not have (an escape
// sequence, a command substitution, a space) are never offered, since
// the shell would put them on the command line as they are.
func TestCompletionDropsBadNames(t *testing.T) {
	dir := t.TempDir()
	yaml := "name: shop\nplugins:\n  web: {command: [w]}\n" +
		"  \"\\e]0;owned\\a\\e[2J\": {command: [x]}\n" +
		"  \"$(touch owned)\": {command: [x]}\n" +
		"  \"a b\": {command: [x]}\n  \"`id`\": {command: [x]}\n"
	require.NoError(t, os.WriteFile(filepath.Join(dir, "plugins.yaml"), []byte(yaml), 0o644))
	line := "graft logs "
	cmd := exec.Command("graft")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "COMP_LINE="+line, "COMP_POINT="+strconv.Itoa(len(line)))
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, string(out))
	assert.Equal(t, "web\n", string(out))
}

// completionDir holds a plugins.yaml (web, worker, db) and other.yaml
// (queue, quota).
func completionDir(t *testing.T) string {
	dir := t.TempDir()
	write := func(name, body string) {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644))
	}
	write("plugins.yaml", "name: shop\nplugins:\n  web: {command: [w]}\n  worker: {command: [x]}\n  db: {command: [d]}\n")
	write("other.yaml", "name: other\nplugins:\n  queue: {command: [q]}\n  quota: {command: [q]}\n")
	return dir
}

// TestCompletionFlagsAfterCommand: graft's global flags after the
// command, the README's own form (graft logs --file x.yaml), are not
// taken for the command's arguments: the plugins are those of --file's
// file, whatever comes before them.
func TestCompletionFlagsAfterCommand(t *testing.T) {
	dir := completionDir(t)
	for line, want := range map[string]string{
		"graft logs ":                             "db\nweb\nworker\n",
		"graft --file other.yaml logs ":           "queue\nquota\n",
		"graft logs --file other.yaml ":           "queue\nquota\n",
		"graft logs --file=other.yaml q":          "queue\nquota\n",
		"graft logs --tls --file other.yaml ":     "queue\nquota\n",
		"graft restart --file other.yaml queue q": "queue\nquota\n",
		"graft logs --fi":                         "--file\n",
	} {
		cmd := exec.Command("graft")
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "COMP_LINE="+line, "COMP_POINT="+strconv.Itoa(len(line)))
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, string(out))
		assert.Equal(t, want, string(out), "%q", line)
	}
}

// TestCompletionZsh: the README's line, in a zsh that ran no rc file and
// so no compinit (zsh -f), completes plugin names on Tab, --file after
// the command included.
func TestCompletionZsh(t *testing.T) {
	testprog.Need(t, "zsh", "zsh")
	dir := completionDir(t)
	tm := newTmuxShell(t, dir, "zsh", "-f")
	tm.send("t", "source <(graft completion zsh)", "Enter")
	tm.send("t", "clear", "Enter")
	tm.waitFor("t", regexp.MustCompile(`\A\$\s*\z`), 10*time.Second)
	assert.NotContains(t, tm.capture("t"), "command not found")
	tm.send("t", "graft logs --file other.yaml q", "Tab", "Tab")
	tm.waitFor("t", regexp.MustCompile(`(?m)queue\s+quota`), 10*time.Second)
	tm.send("t", "C-u", "clear", "Enter")
	tm.waitFor("t", regexp.MustCompile(`\A\$\s*\z`), 10*time.Second)
	tm.send("t", "graft restart wo", "Tab")
	tm.waitFor("t", regexp.MustCompile(`(?m)^\$ graft restart worker\s*$`), 10*time.Second)
}

// TestCompletionFish: fish's script completes plugin names, with --file
// before or after the command.
func TestCompletionFish(t *testing.T) {
	testprog.Need(t, "fish", "fish")
	dir := completionDir(t)
	for line, want := range map[string]string{
		"graft logs ":                   "db\nweb\nworker\n",
		"graft --file other.yaml logs ": "queue\nquota\n",
		"graft logs --file other.yaml ": "queue\nquota\n",
	} {
		cmd := exec.Command("fish", "--no-config", "-c", "graft completion fish | source; complete -C "+shellQuote(line))
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, string(out))
		assert.Equal(t, want, string(out), "%q", line)
	}
}

// TestCompletionReplicas: a plugin with replicas completes as itself and
// as each replica, for graft logs api/2.
func TestCompletionReplicas(t *testing.T) {
	dir := t.TempDir()
	yaml := "name: shop\nplugins:\n  api: {command: [a], replicas: 2}\n  web: {command: [w]}\n"
	require.NoError(t, os.WriteFile(filepath.Join(dir, "plugins.yaml"), []byte(yaml), 0o644))
	line := "graft logs "
	cmd := exec.Command("graft")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "COMP_LINE="+line, "COMP_POINT="+strconv.Itoa(len(line)))
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, string(out))
	assert.Equal(t, "api\napi/1\napi/2\nweb\n", string(out))
}
