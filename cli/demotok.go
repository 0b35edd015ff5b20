package cli

import (
	"context"
	"fmt"
	"time"

	"ragen/config"
	"ragen/env"
	"ragen/llm/tokenizer"
	"ragen/ragen"
)

// trainDemoTokenizer trains a byte-level BPE tokenizer of the given size on
// the demo's own text: chat-rendered demonstration episodes from the
// training and validation env sets (system prompt, observations, format
// instructions and answers). Prompts shrink several-fold against bytes,
// which is what makes a from-scratch model on CPU fast enough.
func trainDemoTokenizer(ctx context.Context, t *config.Tree, size int) (tokenizer.Tokenizer, error) {
	start := time.Now()
	rc, err := rolloutConfig(t)
	if err != nil {
		return nil, err
	}
	// the demonstrations think as the warm-up's will (sft.thought)
	thought := ""
	if t.Has("sft.thought") {
		if thought, err = t.String("sft.thought"); err != nil {
			return nil, err
		}
	}
	byteTok := tokenizer.NewByte()
	var corpus []string
	for _, mode := range []env.Mode{env.ModeTrain, env.ModeVal} {
		var proxy *ragen.AgentProxy
		demo, err := ragen.NewDemonstrator(ragen.DemonstratorConfig{
			Noise: 0.5, MaxActions: rc.AgentProxy.MaxActionsPerTurn, Sep: rc.AgentProxy.ActionSep,
			EnableThink: rc.AgentProxy.EnableThink, Seed: 7, Thought: thought,
		}, func(id int) env.BaseEnv { return proxy.EnvManager(mode).Env(id) })
		if err != nil {
			return nil, err
		}
		if proxy, err = ragen.NewAgentProxy(rc, byteTok, ragen.DefaultProvider(), demo); err != nil {
			return nil, err
		}
		b, err := proxy.Rollout(ctx, mode)
		proxy.Close()
		if err != nil {
			return nil, fmt.Errorf("demo tokenizer: %s demonstrations: %w", mode, err)
		}
		for _, msgs := range b.Messages {
			text, err := byteTok.ApplyChatTemplate(msgs, false)
			if err != nil {
				return nil, err
			}
			corpus = append(corpus, text)
		}
	}
	// the response tags are whole tokens, so that a prompt ending in the forced
	// "<think>" prefix is tokenized as the same text is in training
	tok, err := tokenizer.TrainBPE(corpus, tokenizer.TrainOptions{VocabSize: size, MinFrequency: 2,
		Added: []string{"<think>", "</think>", "<answer>", "</answer>"}})
	if err != nil {
		return nil, err
	}
	n, bytes := 0, 0
	for _, s := range corpus {
		n += len(tok.Encode(s))
		bytes += len(s)
	}
	fmt.Printf("trained a %d-id BPE tokenizer on %d demonstration episodes in %s (%.1f bytes per token)\n",
		tok.VocabSize(), len(corpus), time.Since(start).Round(time.Millisecond), float64(bytes)/float64(max(n, 1)))
	return tok, nil
}
