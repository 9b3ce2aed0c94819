// Package graft holds what belongs to the project as a whole: the JSON
// Schema of plugins.yaml, embedded so the binary can print it.
package graft

import _ "embed"

// Schema is schema.json, the JSON Schema (2020-12) of plugins.yaml.
//
//go:embed schema.json
var Schema []byte
