//go:build !linux

package linearmem

import "github.com/tetratelabs/wazero/experimental"

// allocator is nil: elsewhere than on Linux, wazero's own linear memory.
var allocator experimental.MemoryAllocator
