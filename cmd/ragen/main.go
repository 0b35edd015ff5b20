package main

import (
	"os"

	"ragen/cli" // registers every built-in environment (ragen/env/all)
)

func main() { os.Exit(cli.Main(os.Args[1:])) }
