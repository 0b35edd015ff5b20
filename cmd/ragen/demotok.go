package main

import (
	"context"
	"fmt"

	"ragen/config"
	"ragen/llm/tokenizer"
)

func trainDemoTokenizer(ctx context.Context, t *config.Tree, size int) (tokenizer.Tokenizer, error) {
	return nil, fmt.Errorf("demo.tokenizer.vocab_size=%d: BPE training is not available in this build; use 0 (byte tokenizer)", size)
}
