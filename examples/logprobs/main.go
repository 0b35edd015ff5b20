// Logprobs: read a model's per-token log-probabilities, entropies and
// logits for analysis. With -model DIR it loads a Hugging Face folder
// (config.json, model.safetensors, tokenizer.json); without, it builds a
// seeded tiny model with the byte tokenizer.
//
//	go run . [-model DIR] [-text "..."] [-temperature 1] [-topk 3]
//
// It prints, per token: the token, log p(token | prefix), the entropy of
// the model's next-token distribution there, and the top-k next tokens.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"

	"ragen/llm"
	"ragen/llm/tokenizer"
	"ragen/torch"
)

func main() {
	dir := flag.String("model", "", "Hugging Face model folder (default: a seeded tiny model)")
	text := flag.String("text", "<answer>Up</answer>", "text to score")
	temp := flag.Float64("temperature", 1, "logits are divided by this before the softmax")
	k := flag.Int("topk", 3, "next-token candidates to show")
	flag.Parse()
	if err := run(context.Background(), *dir, *text, *temp, *k, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "logprobs:", err)
		os.Exit(1)
	}
}

func load(dir string) (*llm.Model, tokenizer.Tokenizer, error) {
	if dir == "" {
		tok := tokenizer.NewByte()
		m, err := llm.New(llm.TinyConfig(tok.VocabSize()), llm.Options{Seed: 4})
		return m, tok, err
	}
	tok, err := llm.LoadTokenizer(dir)
	if err != nil {
		return nil, nil, err
	}
	m, err := llm.Load(dir, llm.Options{}) // float32 on the CPU; llm.Options{DType: torch.BFloat16, Device: torch.CUDA(0)} on a GPU
	return m, tok, err
}

// Row is one token's numbers.
type Row struct {
	Token   string
	LogProb float64 // log p(token | prefix); 0 for the first token
	Entropy float64 // entropy of the next-token distribution before it
	Top     []string
	TopLogP []float64
}

// Analyze scores text and returns one Row per token.
func Analyze(m *llm.Model, tok tokenizer.Tokenizer, text string, temperature float64, k int) ([]Row, error) {
	ids := tok.Encode(text)
	if len(ids) < 2 {
		return nil, fmt.Errorf("text %q has %d tokens; need at least 2", text, len(ids))
	}
	s := torch.NewScope()
	defer s.Close()
	var rows []Row
	err := torch.NoGrad(func() error {
		in, pos, attn := llm.PadBatch(s, [][]int{ids}, tok.PadID(), false, torch.CPU)
		// Per-token log-probs and entropies, as the trainer computes them.
		lp, ent := m.TokenLogProbs(s, in, pos, attn, temperature, true) // (1,T) each
		// The raw logits (1,T,V): the distribution over the next token.
		logits := s.DivS(m.Forward(s, in, pos, attn), temperature)
		topV, topI := s.TopK(s.LogSoftmax(logits, -1), int64(k), -1, true) // (1,T,k)
		lps, ents := s.Float32s(lp), s.Float32s(ent)
		tv, ti := s.Float32s(topV), s.Int64s(topI)
		if err := s.Err(); err != nil {
			return err
		}
		for t, id := range ids {
			r := Row{Token: tok.Decode([]int{id}), LogProb: float64(lps[t])}
			if t > 0 {
				r.Entropy = float64(ents[t]) // entropy of p(· | ids[:t])
			}
			for j := 0; j < k; j++ { // the model's guesses for token t+1
				r.Top = append(r.Top, tok.Decode([]int{int(ti[t*k+j])}))
				r.TopLogP = append(r.TopLogP, float64(tv[t*k+j]))
			}
			rows = append(rows, r)
		}
		return nil
	})
	return rows, err
}

func run(_ context.Context, dir, text string, temperature float64, k int, w io.Writer) error {
	m, tok, err := load(dir)
	if err != nil {
		return err
	}
	defer m.Close()
	rows, err := Analyze(m, tok, text, temperature, k)
	if err != nil {
		return err
	}
	sum := 0.0
	fmt.Fprintf(w, "%-4s %-12s %10s %9s   next-token top-%d\n", "t", "token", "log p", "entropy", k)
	for t, r := range rows {
		sum += r.LogProb
		fmt.Fprintf(w, "%-4d %-12q %10.4f %9.4f  ", t, r.Token, r.LogProb, r.Entropy)
		for j := range r.Top {
			fmt.Fprintf(w, " %q %.2f", r.Top[j], r.TopLogP[j])
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "sequence log p = %.4f over %d predicted tokens\n", sum, len(rows)-1)
	return nil
}
