// Command llm_compare runs ragen's llm decode and train-step benchmarks and
// the PyTorch-eager peer (bench/llm_peer.py) on the same model shape and
// thread count, and prints both with the speed ratio and MFU.
//
//	go run ./bench/llm_compare -threads 2 [-what decode|train|all] [-python /usr/bin/python3]
package main
