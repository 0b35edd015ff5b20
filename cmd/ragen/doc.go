// Command ragen trains and evaluates LLM agents in multi-turn text
// environments with StarPO, driven by upstream RAGEN's YAML configs (see
// package ragen/cli, or run `ragen help`).
package main
