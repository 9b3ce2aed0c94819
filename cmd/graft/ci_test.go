//go:build linux

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graftland/graft/hostapi"
	"github.com/graftland/graft/internal/testprog"
	"github.com/graftland/graft/internal/testsupport"
	"github.com/graftland/graft/plan"
)

// The examples under test, from this package's directory.
var (
	githubExample = filepath.Join("..", "..", "examples", "ci", "github-workflow.yml")
	gitlabExample = filepath.Join("..", "..", "examples", "ci", "gitlab-ci.yml")
)

// TestCIExamples runs the shell steps of examples/ci's GitHub Actions
// workflow and GitLab CI file, so that they cannot rot: against a real
// host on loopback, over TLS with certificates made here and a token,
// with this test binary as graft. Only the API that takes the plan's
// comment cannot run here: a local server stands in for it.
func TestCIExamples(t *testing.T) {
	for _, p := range [][2]string{{"bash", "bash"}, {"curl", "curl"}, {"jq", "jq"}} {
		testprog.Need(t, p[0], p[1])
	}
	t.Run("github", func(t *testing.T) {
		h := startCIHost(t)
		api := newGitHubAPI(t)
		m := &ciMachine{t: t, checkout: t.TempDir()}
		m.env = map[string]string{
			"CI": "true", "GITHUB_ACTIONS": "true", "GITHUB_API_URL": api.srv.URL,
			"GITHUB_REPOSITORY": "graftland/shop", "GITHUB_WORKSPACE": m.checkout,
		}
		exprs := map[string]string{
			"vars.GRAFT_HOST": h.addr, "vars.GRAFT_TLS_CA": h.caPEM, "secrets.GRAFT_TOKEN": h.token,
			"github.token": "gh-token", "github.event.pull_request.number": "7",
		}
		s := &ciScenario{t: t, h: h, api: api, m: m,
			job: func(name, event string) jobResult { return m.runGitHubJob(githubExample, name, event, exprs) },
			pr:  "pull_request", push: "push", schedule: "schedule"}
		s.play()
		_, out := s.drift()
		assert.Contains(t, out, "::error file=plugins.yaml::what runs differs from plugins.yaml", "an annotation on the run")
	})
	t.Run("gitlab", func(t *testing.T) {
		h := startCIHost(t)
		api := newGitLabAPI(t)
		m := &ciMachine{t: t, checkout: t.TempDir()}
		m.env = map[string]string{
			"CI": "true", "GITLAB_CI": "true", "CI_API_V4_URL": api.srv.URL + "/api/v4",
			"CI_PROJECT_ID": "42", "CI_MERGE_REQUEST_IID": "7", "CI_PROJECT_DIR": m.checkout,
			"CI_DEFAULT_BRANCH": "main", "CI_COMMIT_BRANCH": "main",
		}
		// GitLab writes variables of type file to files, and passes their
		// paths.
		project := map[string]string{
			"GRAFT_HOST": h.addr, "GRAFT_TLS_CA": h.caFile, "GRAFT_TOKEN_FILE": h.tokenFile,
			"GITLAB_API_TOKEN": "gl-token",
		}
		s := &ciScenario{t: t, h: h, api: api, m: m,
			job: func(name, source string) jobResult { return m.runGitLabJob(gitlabExample, name, source, project) },
			pr:  "merge_request_event", push: "push", schedule: "schedule"}
		s.play()
	})
}

// The plugins file of the repository, as pull requests change it.
const (
	ciPluginsV1 = "name: shop\nplugins:\n  web: {command: [plug, serve, web]}\n"
	ciPluginsV2 = ciPluginsV1 + "  api: {command: [plug, serve, api], uses: [web]}\n"
	ciPluginsV3 = "name: shop\nplugins:\n  web: {command: [plug, serve, web], env: {MODE: blue}}\n" +
		"  api: {command: [plug, serve, api], uses: [web]}\n"
)

// ciMarker opens the plan's comment in both examples, to find it again.
const ciMarker = "<!-- graft plan -->"

// ciScenario plays a repository's life through a CI example's jobs: a
// pull request planned, pushed to and planned again, merged and applied,
// then the drift checks of a schedule, before and after a change.
type ciScenario struct {
	t                  *testing.T
	h                  *ciHost
	api                *commentAPI
	m                  *ciMachine
	job                func(name, event string) jobResult
	pr, push, schedule string // the names of the events that run the jobs
}

func (s *ciScenario) play() {
	t := s.t
	s.write(ciPluginsV1)
	first := s.plan("Plan for shop: 1 to start, 0 to replace")
	comments, calls := s.api.state()
	assert.Equal(t, []string{"GET " + s.api.list, "GET " + s.api.list, "POST " + s.api.list}, calls,
		"every page is read, then the plan's comment is created")

	s.write(ciPluginsV2)
	second := s.plan("Plan for shop: 2 to start, 0 to replace")
	assert.Equal(t, first.ID, second.ID, "one comment, updated")
	_, calls = s.api.state()
	assert.Equal(t, fmt.Sprintf("%s %s%d", s.api.update, s.api.item, first.ID), calls[len(calls)-1], "the comment is updated")
	comments, _ = s.api.state()
	assert.Equal(t, "Looks good to me.", comments[0].Body, "the reviewer's comment is left alone")

	r := s.job("apply", s.push)
	require.Zero(t, r.code, "apply:\n%s", r.out)
	assert.Contains(t, r.out, "start web")
	assert.Contains(t, r.out, "start api")
	status, code := s.h.graft(t, s.m.checkout, "status")
	require.Zero(t, code, status)
	assert.Regexp(t, `(?m)^web +local +running`, status)
	assert.Regexp(t, `(?m)^api +local +running`, status)

	code, out := s.drift()
	assert.Zero(t, code, "the drift check when what runs is what the file says:\n%s", out)
	// Drift on the host: web dies, and nothing restarts it (no retry).
	s.killPlugin("web")
	code, out = s.drift()
	assert.Equal(t, 2, code, "the drift check after web died:\n%s", out)
	assert.Regexp(t, `\+ start +web +failed`, out)
	r = s.job("apply", s.push)
	require.Zero(t, r.code, "apply again:\n%s", r.out)
	code, out = s.drift()
	assert.Zero(t, code, "the drift check once applied again:\n%s", out)
	// A change merged but not applied: what runs differs from the file.
	s.write(ciPluginsV3)
	code, out = s.drift()
	assert.Equal(t, 2, code, "the drift check after a change:\n%s", out)
	assert.Contains(t, out, "replace web")
}

// killPlugin kills plugin's process with SIGKILL, behind graft's back,
// and waits until the host reports it failed.
func (s *ciScenario) killPlugin(plugin string) {
	t := s.t
	status := func() hostapi.PluginStatus {
		out, code := s.h.graft(t, s.m.checkout, "status", "--json")
		require.Zero(t, code, out)
		var st hostapi.Status
		require.NoError(t, json.Unmarshal([]byte(out), &st), out)
		for _, p := range st.Plugins {
			if p.Name == plugin {
				return p
			}
		}
		t.Fatalf("no plugin %s in the status:\n%s", plugin, out)
		return hostapi.PluginStatus{}
	}
	pid := status().PID
	require.Positive(t, pid)
	require.NoError(t, syscall.Kill(pid, syscall.SIGKILL))
	deadline := time.Now().Add(15 * time.Second)
	for status().Status != string(plan.Failed) {
		require.False(t, time.Now().After(deadline), "%s is not failed 15 seconds after SIGKILL", plugin)
		time.Sleep(50 * time.Millisecond)
	}
}

// write commits contents as the repository's plugins file.
func (s *ciScenario) write(contents string) {
	require.NoError(s.t, os.WriteFile(filepath.Join(s.m.checkout, "plugins.yaml"), []byte(contents), 0o644))
}

// plan runs the plan job of a pull request and returns the plan's
// comment, which must hold the marker and the Markdown plan, as graft
// prints it, starting with summary.
func (s *ciScenario) plan(summary string) apiComment {
	t := s.t
	want, code := s.h.graft(t, s.m.checkout, "plan", "--format", "markdown", "plugins.yaml")
	require.Zero(t, code, want)
	require.True(t, strings.HasPrefix(want, summary), "the plan:\n%s", want)
	require.Contains(t, want, "```mermaid")

	r := s.job("plan", s.pr)
	require.Zero(t, r.code, "plan:\n%s", r.out)
	comments, _ := s.api.state()
	require.Len(t, comments, busyThread+1, "the comments before, and the plan's")
	plan := comments[busyThread]
	assert.Equal(t, ciMarker+"\n"+want, plan.Body, "the plan's comment")
	return plan
}

// drift runs the scheduled drift check and returns its exit status and
// output.
func (s *ciScenario) drift() (int, string) {
	r := s.job("drift", s.schedule)
	return r.code, r.out
}

// ciHost is a graft host on loopback, over TLS with a token, as the CI
// examples reach it.
type ciHost struct {
	addr      string // tcp://127.0.0.1:PORT
	token     string
	tokenFile string
	caFile    string // the CA that signed its certificate
	caPEM     string
}

// startCIHost starts a host with TLS and a token on a free loopback
// port, and stops it, and whatever it started, when the test ends.
func startCIHost(t *testing.T) *ciHost {
	dir := t.TempDir()
	certs := filepath.Join(dir, "certs")
	testsupport.WriteCerts(t, certs)
	h := &ciHost{addr: "tcp://" + testsupport.FreeAddr(t), token: "ci-s3cret-token",
		tokenFile: filepath.Join(dir, "token"), caFile: filepath.Join(certs, "ca.pem")}
	require.NoError(t, os.WriteFile(h.tokenFile, []byte(h.token+"\n"), 0o600))
	ca, err := os.ReadFile(h.caFile)
	require.NoError(t, err)
	h.caPEM = string(ca)

	state := filepath.Join(dir, "state")
	cmd := exec.Command("graft", "--state-dir", state, "host", "--listen", h.addr, "--token-file", h.tokenFile,
		"--tls-cert", filepath.Join(certs, "server.pem"), "--tls-key", filepath.Join(certs, "server.key"))
	cmd.Env = append(ciBaseEnv(), "GORACE=atexit_sleep_ms=0", "GRAFT_TEST_RUN="+dir)
	logf, err := os.Create(filepath.Join(dir, "host.log"))
	require.NoError(t, err)
	defer logf.Close()
	cmd.Stdout, cmd.Stderr = logf, logf
	require.NoError(t, cmd.Start())
	exited := make(chan struct{})
	go func() {
		cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() { stopCIHost(t, cmd, exited, dir) })
	waitCIHost(t, state, exited, filepath.Join(dir, "host.log"))
	return h
}

// waitCIHost waits until the host of state answers on its socket.
func waitCIHost(t *testing.T, state string, exited chan struct{}, log string) {
	c, err := hostapi.NewClient(state)
	require.NoError(t, err)
	defer c.Close()
	deadline := time.Now().Add(15 * time.Second)
	for c.Ping(context.Background(), time.Second) != nil {
		select {
		case <-exited:
			b, _ := os.ReadFile(log)
			t.Fatalf("the host exited:\n%s", b)
		default:
		}
		require.False(t, time.Now().After(deadline), "the host does not answer")
		time.Sleep(20 * time.Millisecond)
	}
}

// stopCIHost ends the host as systemd would, with SIGTERM (it stops its
// plugins first), then kills whatever of the test is left.
func stopCIHost(t *testing.T, cmd *exec.Cmd, exited chan struct{}, run string) {
	cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(20 * time.Second):
		t.Errorf("the host did not stop within 20 seconds of SIGTERM")
		cmd.Process.Kill()
		<-exited
	}
	for _, pid := range marked(run) {
		t.Errorf("process %d outlived the host", pid)
		syscall.Kill(pid, syscall.SIGKILL)
	}
}

// graft runs graft in dir against the host, through the environment as
// the examples do, and returns its output (and its errors, if it failed)
// and exit status.
func (h *ciHost) graft(t *testing.T, dir string, args ...string) (string, int) {
	cmd := exec.Command("graft", args...)
	cmd.Dir = dir
	cmd.Env = append(ciBaseEnv(), "GORACE=atexit_sleep_ms=0",
		"GRAFT_HOST="+h.addr, "GRAFT_TOKEN_FILE="+h.tokenFile, "GRAFT_TLS_CA="+h.caFile)
	out, err := cmd.Output()
	if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
		return string(out) + string(ee.Stderr), ee.ExitCode()
	}
	require.NoError(t, err)
	return string(out), 0
}
