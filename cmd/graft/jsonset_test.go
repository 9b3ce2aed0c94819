package main

import (
	"encoding/json"
	"os"
	"strconv"
	"strings"

	"github.com/rogpeppe/go-internal/testscript"
)

// jsonset FILE PATH VALUE sets the value at PATH of the JSON document in
// FILE to VALUE, itself JSON: PATH is dot-separated object keys and array
// indexes, an index of + appending. Scripts edit saved plans with it, as
// an operator with an editor would.
func cmdJSONSet(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 3 {
		ts.Fatalf("usage: jsonset file path value")
	}
	b, err := os.ReadFile(ts.MkAbs(args[0]))
	ts.Check(err)
	var doc, value any
	ts.Check(json.Unmarshal(b, &doc))
	if err := json.Unmarshal([]byte(args[2]), &value); err != nil {
		ts.Fatalf("jsonset: value %s: %v", args[2], err)
	}
	doc = setPath(ts, doc, strings.Split(args[1], "."), value)
	out, err := json.MarshalIndent(doc, "", "  ")
	ts.Check(err)
	ts.Check(os.WriteFile(ts.MkAbs(args[0]), append(out, '\n'), 0o600))
}

func setPath(ts *testscript.TestScript, node any, path []string, value any) any {
	if len(path) == 0 {
		return value
	}
	switch n := node.(type) {
	case map[string]any:
		n[path[0]] = setPath(ts, n[path[0]], path[1:], value)
		return n
	case []any:
		if path[0] == "+" {
			return append(n, setPath(ts, nil, path[1:], value))
		}
		i, err := strconv.Atoi(path[0])
		if err != nil || i < 0 || i >= len(n) {
			ts.Fatalf("jsonset: no index %s in an array of %d", path[0], len(n))
		}
		n[i] = setPath(ts, n[i], path[1:], value)
		return n
	}
	ts.Fatalf("jsonset: %s: not an object or an array", path[0])
	return nil
}
