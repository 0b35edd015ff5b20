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
