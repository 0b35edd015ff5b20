package llm_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"ragen/collapse"
	"ragen/llm"
	"ragen/llm/tokenizer"
	"ragen/torch"
)

func ExampleNew() {
	cfg := llm.TinyConfig(tokenizer.NewByte().VocabSize())
	m, err := llm.New(cfg, llm.Options{DType: torch.Float32, Device: torch.CPU, Seed: 1})
	if err != nil {
		panic(err)
	}
	defer m.Close()
	s := torch.NewScope()
	defer s.Close()
	ids, pos, attn := llm.PadBatch(s, [][]int{{1, 2, 3}, {4, 5}}, 0, false, torch.CPU)
	logits := m.Forward(s, ids, pos, attn)
	if err := s.Err(); err != nil {
		panic(err)
	}
	// embedding 259·64 = 16,576; per layer q 64·64+64, k and v 32·64+32 each,
	// o 64·64, gate/up/down 3·128·64, two norms 2·64 = 37,120; final norm 64:
	// 16,576 + 2·37,120 + 64 = 90,880 (the head is tied).
	fmt.Println(cfg.ParamCount(), "parameters; logits", logits.Shape())
	// Output: 90880 parameters; logits [2 3 259]
}

func ExampleModel_Generate() {
	tok := tokenizer.NewByte()
	m, err := llm.New(llm.TinyConfig(tok.VocabSize()), llm.Options{DType: torch.Float32, Device: torch.CPU, Seed: 1})
	if err != nil {
		panic(err)
	}
	defer m.Close()
	prompts := [][]int{tok.Encode("Hello"), tok.Encode("Hi")}
	res, err := m.Generate(context.Background(), tok, prompts, llm.GenOptions{
		MaxNewTokens: 8, Temperature: 0.8, TopP: 0.95, Seed: 7, IgnoreEOS: true,
	})
	if err != nil {
		panic(err)
	}
	for _, r := range res {
		fmt.Println(len(r.IDs), len(r.LogProbs), r.FinishReason)
	}
	// Output:
	// 8 8 length
	// 8 8 length
}

func ExampleLoad() {
	dir, _ := os.MkdirTemp("", "qwen")
	defer os.RemoveAll(dir)
	m, _ := llm.New(llm.TinyConfig(259), llm.Options{DType: torch.Float32, Device: torch.CPU, Seed: 1})
	// the byte tokenizer has no Hugging Face files: SaveHF refuses before writing
	if err := llm.SaveHF(dir, m, tokenizer.NewByte()); err != nil {
		fmt.Println("SaveHF: tokenizer refused")
	}
	if err := m.Save(dir); err != nil {
		panic(err)
	}
	m.Close()
	m2, err := llm.Load(dir, llm.Options{DType: torch.BFloat16, Device: torch.CPU})
	if err != nil {
		panic(err)
	}
	defer m2.Close()
	entries, _ := os.ReadDir(dir)
	var names []string
	for _, e := range entries {
		names = append(names, filepath.Base(e.Name()))
	}
	sort.Strings(names)
	fmt.Println(names, m2.Options().DType)
	// Output:
	// SaveHF: tokenizer refused
	// [config.json generation_config.json model.safetensors] bfloat16
}

func ExampleModel_EnableLoRA() {
	m, _ := llm.New(llm.TinyConfig(259), llm.Options{DType: torch.Float32, Device: torch.CPU, Seed: 1})
	defer m.Close()
	fmt.Println(len(m.Trainable()), "trainable tensors")
	err := m.EnableLoRA(llm.LoRAConfig{Rank: 8, Alpha: 16, Targets: llm.ParseTargets("q_proj,v_proj")})
	if err != nil {
		panic(err)
	}
	fmt.Println(len(m.Trainable()), "trainable tensors with LoRA")
	// Output:
	// 16 trainable tensors
	// 8 trainable tensors with LoRA
}

func ExampleNewScorer() {
	m, _ := llm.New(llm.TinyConfig(259), llm.Options{DType: torch.Float32, Device: torch.CPU, Seed: 1})
	defer m.Close()
	sc := llm.NewScorer(m, 4)
	scores, err := sc.ScoreReasoning(context.Background(), []collapse.Pair{
		{Prompt: []int{1, 2, 3}, Reasoning: []int{4, 5}},
	})
	if err != nil {
		panic(err)
	}
	fmt.Println(scores[0].Tokens, scores[0].SumLogProb < 0)
	// Output: 2 true
}
