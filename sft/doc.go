// Package sft warms a policy up by supervised fine-tuning on solver
// demonstrations before reinforcement learning (`ragen sft`).
//
// Demonstrations are made on the fly: every step rolls out the training env
// set with a ragen.Demonstrator (each env's oracle, env.Oracle, with a
// configurable share of uniformly random actions), and the context manager
// turns the episodes into training sequences in exactly the format the RL
// stage sees (system prompt, turns, <think>…</think><answer>…</answer>). The
// loss is the token-mean negative log-likelihood over the loss mask, which
// covers only the demonstrated responses.
package sft
