// Command benchall runs ragen's side-by-side benchmarks against their
// PyTorch peers in one run and prints the ratios (make bench).
package main
