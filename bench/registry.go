package bench

import (
	"io"
	"sort"
	"sync"
)

// RunConfig is what every comparison gets from benchall.
type RunConfig struct {
	Threads, Warmup, Runs int
	Dir                   string  // where the peer scripts live
	PeakFLOPs             float64 // measured fp32 matmul peak, for MFU
	KeepFreed             bool    // torch.KeepFreedMemory is on (child processes do the same)
}

// Comparison is a side-by-side benchmark that prints its own table.
type Comparison struct {
	Name string
	Run  func(cfg RunConfig, w io.Writer) error
}

var (
	mu    sync.Mutex
	comps []Comparison
)

// Register adds a comparison that benchall runs after the training-step
// workloads (call it from an init function).
func Register(c Comparison) {
	mu.Lock()
	defer mu.Unlock()
	comps = append(comps, c)
}

// Comparisons returns the registered comparisons sorted by name.
func Comparisons() []Comparison {
	mu.Lock()
	defer mu.Unlock()
	out := append([]Comparison(nil), comps...)
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
