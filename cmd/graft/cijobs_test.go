//go:build linux

package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"
)

// ciMachine is what a CI system's runner gives a job of the examples in
// examples/ci: a checkout of the repository as its working directory and
// an environment, whose PATH has graft (this test binary) and plug.
type ciMachine struct {
	t        *testing.T
	checkout string
	env      map[string]string // the variables the CI system sets
}

// jobResult is how a job ended: the exit status of the step that failed
// (0 if none did), and the output of every step run.
type jobResult struct {
	code int
	out  string
}

// runBash runs script with bash and the given arguments (a CI system's
// way of running a shell step) in the checkout, with env.
func (m *ciMachine) runBash(script string, env map[string]string, args ...string) (int, string) {
	f := filepath.Join(m.t.TempDir(), "step.sh")
	require.NoError(m.t, os.WriteFile(f, []byte(script), 0o600))
	cmd := exec.Command("bash", append(args, f)...)
	cmd.Dir = m.checkout
	// Under -race, graft would sleep a second at exit.
	cmd.Env = append(ciBaseEnv(), "GORACE=atexit_sleep_ms=0")
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	out, err := cmd.CombinedOutput()
	if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
		return ee.ExitCode(), string(out)
	}
	require.NoError(m.t, err)
	return 0, string(out)
}

// ciOwnEnv matches the variables a CI system, or graft's settings, set.
var ciOwnEnv = regexp.MustCompile(`^(GRAFT_(HOST|TOKEN_FILE|TLS.*|STATE_DIR)|GITHUB_.*|RUNNER_.*|CI|CI_.*|GITLAB_.*)$`)

// ciBaseEnv is this test's environment without what a CI system, or
// graft's own settings, would set: the jobs see only what the test gives
// them of those.
func ciBaseEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if !ciOwnEnv.MatchString(k) {
			env = append(env, kv)
		}
	}
	return env
}

// merged returns the variables of maps, later ones winning.
func merged(maps ...map[string]string) map[string]string {
	all := map[string]string{}
	for _, m := range maps {
		for k, v := range m {
			all[k] = v
		}
	}
	return all
}

// ghWorkflow is what the test reads of a GitHub Actions workflow.
type ghWorkflow struct {
	On       map[string]yaml.Node `yaml:"on"`
	Env      map[string]string    `yaml:"env"`
	Defaults struct {
		Run struct {
			Shell string `yaml:"shell"`
		} `yaml:"run"`
	} `yaml:"defaults"`
	Jobs map[string]struct {
		If    string            `yaml:"if"`
		Env   map[string]string `yaml:"env"`
		Steps []struct {
			Name  string            `yaml:"name"`
			Uses  string            `yaml:"uses"`
			Run   string            `yaml:"run"`
			Shell string            `yaml:"shell"`
			Env   map[string]string `yaml:"env"`
		} `yaml:"steps"`
	} `yaml:"jobs"`
}

// ghExpr is an expression of GitHub Actions: ${{ ... }}.
var ghExpr = regexp.MustCompile(`\$\{\{\s*(.*?)\s*\}\}`)

// runGitHubJob runs the job of the workflow in file that event triggers,
// as a GitHub runner would: its actions stood in for (the checkout is
// there, Go and graft are installed), its run steps with bash in order
// until one fails, with the workflow's, the job's and the step's env, the
// expressions in them replaced from exprs, and what a step appends to
// $GITHUB_ENV given to the later ones.
func (m *ciMachine) runGitHubJob(file, job, event string, exprs map[string]string) jobResult {
	t := m.t
	var wf ghWorkflow
	b, err := os.ReadFile(file)
	require.NoError(t, err)
	require.NoError(t, yaml.Unmarshal(b, &wf), file)
	j, ok := wf.Jobs[job]
	require.True(t, ok, "%s has no job %s", file, job)
	require.Contains(t, wf.On, event, "%s: the workflow runs on %s", file, event)
	require.Contains(t, j.If, "'"+event+"'", "job %s runs on %s", job, event)

	eval := func(env map[string]string) map[string]string {
		out := map[string]string{}
		for k, v := range env {
			out[k] = ghExpr.ReplaceAllStringFunc(v, func(e string) string {
				val, ok := exprs[ghExpr.FindStringSubmatch(e)[1]]
				require.True(t, ok, "%s: an expression the test does not know: %s", file, e)
				return val
			})
		}
		return out
	}
	temp := t.TempDir()
	ghEnv := filepath.Join(temp, "github_env")
	require.NoError(t, os.WriteFile(ghEnv, nil, 0o600))
	runner := merged(m.env, map[string]string{"GITHUB_EVENT_NAME": event, "GITHUB_ENV": ghEnv, "RUNNER_TEMP": temp})
	added := map[string]string{}
	var res jobResult
	for _, s := range j.Steps {
		switch {
		case strings.HasPrefix(s.Uses, "actions/checkout@"), strings.HasPrefix(s.Uses, "actions/setup-go@"):
			continue // the checkout is the working directory; Go is here
		case s.Uses != "":
			t.Fatalf("%s: job %s uses %s, which the test cannot stand in for", file, job, s.Uses)
		case s.Name == "Install graft":
			require.Contains(t, s.Run, `go install "github.com/graftland/graft/cmd/graft@`)
			continue // graft is on PATH: this test binary
		}
		// Expressions in a script are a way in for whatever a pull
		// request's author writes: the examples pass them through env.
		require.NotContains(t, s.Run, "${{", "%s: step %q", file, s.Name)
		shell := s.Shell
		if shell == "" {
			shell = wf.Defaults.Run.Shell
		}
		require.Equal(t, "bash", shell, "%s: step %q", file, s.Name)
		env := merged(runner, eval(wf.Env), eval(j.Env), added, eval(s.Env))
		code, out := m.runBash(s.Run, env, "--noprofile", "--norc", "-eo", "pipefail")
		res.out += out
		if res.code = code; code != 0 {
			return res
		}
		added = readGitHubEnv(t, ghEnv)
	}
	return res
}

// readGitHubEnv reads the NAME=value lines steps appended to
// $GITHUB_ENV.
func readGitHubEnv(t *testing.T, file string) map[string]string {
	b, err := os.ReadFile(file)
	require.NoError(t, err)
	env := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if l == "" {
			continue
		}
		k, v, ok := strings.Cut(l, "=")
		require.True(t, ok && !strings.Contains(k, "<<"), "$GITHUB_ENV: a line the test does not read: %q", l)
		env[k] = v
	}
	return env
}

// glJob is what the test reads of a job of a GitLab CI file.
type glJob struct {
	Rules []struct {
		If string `yaml:"if"`
	} `yaml:"rules"`
	BeforeScript []string          `yaml:"before_script"`
	Script       []string          `yaml:"script"`
	Variables    map[string]string `yaml:"variables"`
}

// runGitLabJob runs the job of the CI file that the pipeline source
// triggers, as GitLab's runner would with bash: its script's lines in one
// shell that stops at the first that fails, with the machine's
// predefined variables, the file's, the job's, then the project's
// (project, GitLab's settings, which win over the file's). Its before_script installs graft (and jq), which are
// here already: the test checks it does no more.
func (m *ciMachine) runGitLabJob(file, job, source string, project map[string]string) jobResult {
	t := m.t
	var top map[string]yaml.Node
	b, err := os.ReadFile(file)
	require.NoError(t, err)
	require.NoError(t, yaml.Unmarshal(b, &top), file)
	var vars map[string]string
	var def glJob
	node, ok := top["variables"]
	require.True(t, ok && node.Decode(&vars) == nil, "%s: variables", file)
	if node, ok := top["default"]; ok {
		require.NoError(t, node.Decode(&def), "%s: default", file)
	}
	var j glJob
	node, ok = top[job]
	require.True(t, ok, "%s has no job %s", file, job)
	require.NoError(t, node.Decode(&j), "%s: job %s", file, job)
	require.Len(t, j.Rules, 1, "%s: job %s", file, job)
	require.Contains(t, j.Rules[0].If, `$CI_PIPELINE_SOURCE == "`+source+`"`, "job %s runs on %s", job, source)

	before := j.BeforeScript
	if before == nil {
		before = def.BeforeScript
	}
	require.NotEmpty(t, before, "%s: job %s installs graft", file, job)
	for _, l := range before {
		ok := strings.HasPrefix(l, `go install "github.com/graftland/graft/cmd/graft@`) ||
			regexp.MustCompile(`^apt-get update -qq && apt-get install -y -qq jq( >/dev/null)?$`).MatchString(l)
		require.True(t, ok, "%s: job %s: a before_script line the test cannot stand in for: %q", file, job, l)
	}
	code, out := m.runBash(strings.Join(j.Script, "\n"), merged(m.env, map[string]string{"CI_PIPELINE_SOURCE": source}, vars, j.Variables, project), "-eo", "pipefail")
	return jobResult{code: code, out: out}
}
