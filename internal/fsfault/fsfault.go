// Package fsfault breaks file systems for real, for tests of what graft
// does when its state cannot be written.
package fsfault
