// Package spec owns plugins.yaml: its types, loading with file:line:column
// errors, defaults, validation, Effect-style durations and the canonical
// hash of a plugin.
//
// # The file
//
// A plugins file declares a project (name, default: the file's directory
// name), the graft runners its remote plugins use (runners), and the
// plugins themselves (plugins), each a long-running process and where it
// runs:
//
//	name: shop
//	runners:
//	  edge: {address: tcp://10.0.0.5:7070, tokenFile: /etc/graft/edge.token}
//	plugins:
//	  cache:
//	    command: [redis-server, --port, "6380"]
//	    ready: {tcp: 127.0.0.1:6380, timeout: 10 seconds}
//	  api:
//	    command: [./bin/api]
//	    env: {CACHE_ADDR: 127.0.0.1:6380}
//	    uses: [cache]
//	  writer: {run: runner, runner: edge, command: [/opt/app/writer]}
//
// The placements are local (the default), worker, runner and floating;
// schema.json at the repository root describes every field, and README.md
// shows each by example.
//
// # Loading
//
// Load reads a file, checks its shape while decoding (unknown keys, wrong
// types, bad durations), then its values (names, signals, addresses,
// positive durations), applies the defaults (applyDefaults, the one place
// that knows them), and finally checks what needs the whole file: what each
// placement requires, references between entries and uses cycles. It
// reports every problem of the file at once as Errors, sorted by position,
// each as
//
//	plugins.yaml:4:12: plugins.api.uses[0]: unknown plugin "db"
//
// shutdownTimeout is fixed at 5 seconds in YAML, as in the table of
// docs/semantics.md, "Windows and defaults", and a file that sets it is
// rejected; the Go API of the placements can change it.
//
// # Durations
//
// Durations are strings in Effect's form, "30 seconds", "500 millis",
// "1.5 minutes", parsed by ParseDuration exactly as Effect 4.x
// Duration.fromInputUnsafe does. "Infinity" parses, and every duration field
// of plugins.yaml rejects it, as it rejects zero and negative values.
//
// # Hashes
//
// Fields is the canonical flat form of a plugin after defaults, and Hash its
// digest: it changes when anything that shapes the plugin's process
// changes, and not with key order, comments, anchors, the order of uses or
// defaults written out. The plan package compares hashes to decide what to
// replace, and field digests to say why. An env value enters them only as
// an HMAC under the spec's DigestKey (a host's, kept in its state dir; a
// fresh random one for a spec just parsed), so that no hash or digest lets
// anyone test guesses of it without the key; WithKey gives a spec the
// key to compare under.
package spec
