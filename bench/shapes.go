package bench

import "ragen/llm"

// Qwen05B is Qwen2.5-0.5B's shape (vocabulary 151,936, hidden 896, 14 query
// and 2 KV heads, intermediate 4,864, tied head) with the given number of
// layers (the real model has 24), randomly initialised, float32.
func Qwen05B(layers int) llm.Config {
	c := llm.TinyConfig(151936)
	c.HiddenSize = 896
	c.IntermediateSize = 4864
	c.NumHiddenLayers = layers
	c.NumAttentionHeads = 14
	c.NumKeyValueHeads = 2
	c.MaxPositionEmbeddings = 32768
	c.TieWordEmbeddings = true
	return c
}

// Qwen15B is Qwen2.5-1.5B's shape (vocabulary 151,936, hidden 1,536, 12
// query and 2 KV heads, intermediate 8,960, tied head) with the given number
// of layers (the real model has 28).
func Qwen15B(layers int) llm.Config {
	c := Qwen05B(layers)
	c.HiddenSize = 1536
	c.IntermediateSize = 8960
	c.NumAttentionHeads = 12
	return c
}
