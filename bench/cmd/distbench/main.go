// Command distbench prints the dist rows of `make bench` alone: c10d
// collective times and the sharded AdamW update for 1, 2 and 3 processes
// on 127.0.0.1 (it re-executes itself as the ranks).
package main

import (
	"flag"
	"fmt"
	"os"
	"runtime"

	"ragen/bench"
)

func main() {
	threads := flag.Int("threads", runtime.NumCPU(), "libtorch threads, split over the ranks")
	flag.Parse()
	for _, c := range bench.Comparisons() {
		if c.Name != "dist" {
			continue
		}
		if err := c.Run(bench.RunConfig{Threads: *threads}, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "distbench:", err)
			os.Exit(1)
		}
	}
}
