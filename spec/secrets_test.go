package spec

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// marker is a secret's value, wrong for every field it goes in, as a
// signal, a duration, a name, an address, a URL, a regular expression, a
// path, a number.
const marker = `s3cr3t-v4lue-0042 "(\`

// TestSecretsNeverQuoted: a value that came from a variable is never in
// an error: a field that uses ${SECRET} (whole, or in part) and is wrong
// is reported as written, naming the variable. Every field of a plugin
// and a runner that a variable can fill is tried, and every problem of
// every parse searched for the value.
func TestSecretsNeverQuoted(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "bin/api"), "#!/bin/sh\n")
	lookup := VarsLookup(map[string]string{"SECRET": marker})
	fields := []string{
		"run: %s", "command: [bin/api, '%s\x00']", "stopSignal: '%s'", "reloadSignal: '%s'",
		"dir: '%s\x00'", "instance: '%s'", "uses: ['%s']", "ready: {tcp: '%s'}", "ready: {http: '%s'}",
		"ready: {log: '%s'}", "ready: {tcp: 'a:1', timeout: '%s'}", "health: {tcp: '%s'}",
		"health: {http: 'http://a/', interval: '%s'}", "health: {tcp: 'a:1', failures: '%s'}", "retry: {delay: '%s'}",
		"retry: {factor: '%s'}", "retry: {attempts: '%s'}", "files: ['%s']", "files: [{path: bin/api, onChange: '%s'}]",
		"envFile: ['%s']", "env: {A: '%s\x00'}", "inheritEnv: ['%s=']", "memory: '%s'", "once: '%s'",
		"run: floating\n    elect: {dir: d, port: '%s'}",
		"run: floating\n    elect: {dir: d, address: '%s'}", "run: floating\n    elect: {dir: d, port: 1, ttl: '%s'}",
		"run: floating\n    elect: {port: 1, etcd: {endpoints: ['%s']}}", "run: runner\n    runner: '%s'",
		"ready: {tcp: 'h%s:99999'}", "stopSignal: 'SIG%sTERM'",
	}
	top := []string{
		"name: '%s'\nplugins: {}", "runners: {edge: {address: '%s'}}\nplugins: {}",
		"runners: {edge: {address: 'tcp://a:1', connect: {lease: '%s'}}}\nplugins: {}",
	}
	var docs []string
	for _, f := range fields {
		docs = append(docs, "plugins:\n  api:\n    command: [bin/api]\n    "+strings.Replace(f, "%s", "${SECRET}", 1)+"\n")
	}
	for _, f := range top {
		docs = append(docs, strings.Replace(f, "%s", "${SECRET}", 1)+"\n")
	}
	for _, doc := range docs {
		doc = strings.Replace(doc, "    command: [bin/api]\n    command:", "    command:", 1)
		_, err := ParseWith(filepath.Join(dir, "plugins.yaml"), dir, []byte(doc), Options{Lookup: lookup})
		require.Error(t, err, "%q is wrong", doc)
		for _, leak := range []string{marker, "s3cr3t"} {
			assert.NotContains(t, err.Error(), leak, "%q", doc)
		}
	}
}

// TestEnvFileNeverQuoted: an env file that is no env file (a token's) is
// refused at its line, without its content.
func TestEnvFileNeverQuoted(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "bin/api"), "#!/bin/sh\n")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "token"), []byte("dre5BnYBs3cr3t+/==\n"), 0o600))
	_, err := parseAt(t, dir, "plugins:\n  api:\n    command: [bin/api]\n    envFile: [token]\n")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "plugins.api.envFile[0]: token:1: bad name")
	assert.NotContains(t, err.Error(), "s3cr3t")
}
