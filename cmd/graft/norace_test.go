//go:build !race

package main

// raceBuild says this test binary was built with -race.
const raceBuild = false
