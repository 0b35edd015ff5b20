// Command distbench prints the dist rows of `make bench` alone: c10d
// collective times and the sharded AdamW update for 1, 2 and 3 processes
// on 127.0.0.1 (it re-executes itself as the ranks).
package main
