// Command apicheck fails when an exported identifier of a non-internal ragen
// package mentions an internal type (see package ragen/internal/apicheck).
//
//	go run ./internal/cmd/apicheck [pattern ...]   (default ./...)
package main

import (
	"fmt"
	"os"

	"ragen/internal/apicheck"
)

func main() {
	patterns := os.Args[1:]
	if len(patterns) == 0 {
		patterns = []string{"./..."}
	}
	vs, err := apicheck.Check(".", patterns...)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	for _, v := range vs {
		fmt.Fprintln(os.Stderr, v)
	}
	if len(vs) > 0 {
		fmt.Fprintf(os.Stderr, "apicheck: %d exported identifiers mention internal types; code in another module cannot use them\n", len(vs))
		os.Exit(1)
	}
	fmt.Println("apicheck: no exported identifier mentions an internal type")
}
