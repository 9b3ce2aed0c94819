//go:build race

package main

// raceBuild says this test binary was built with -race: the graft
// programs the scripts build are too, so that they share its packages
// in the build cache.
const raceBuild = true
