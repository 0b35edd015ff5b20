// Command ragen-guess is ragen with one more environment: it registers
// env_type guess_number and hands the command line to cli.Main, so every
// ragen command (train, eval, sft, dash, launch, ...) knows the new env and
// reads it from YAML like a built-in one:
//
//	go run . eval  --config-path ../conf --config-name guess_number --policy oracle
//	go run . train --config-path ../conf --config-name guess_number
package main

import (
	"os"

	_ "example.com/ragen-examples/customenv/guess" // registers env_type guess_number

	"ragen/cli"
)

func main() { os.Exit(cli.Main(os.Args[1:])) }
