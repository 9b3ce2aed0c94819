//go:build linux

package proc

import "testing"

func BenchmarkTable(b *testing.B) {
	for b.Loop() {
		if _, err := table(); err != nil {
			b.Fatal(err)
		}
	}
}
