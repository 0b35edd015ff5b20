// Package bench holds ragen's side-by-side benchmarks: each workload is
// implemented here on ragen's libtorch binding and, with the same shapes,
// threads and initial weights, in a PyTorch peer script (bench/*_peer.py).
// `make bench` (bench/cmd/benchall) runs both in one process run and prints
// the ratios; speed targets live here, never as timed assertions in tests.
package bench
