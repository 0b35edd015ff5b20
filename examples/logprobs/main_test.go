package main

import (
	"bytes"
	"context"
	"math"
	"strings"
	"testing"

	"ragen/llm"
	"ragen/llm/tokenizer"
)

// The numbers agree with each other: the log-prob of token t+1 from the
// trainer's path equals the log-softmax of the logits at t read from the
// top-k list when the token is the top choice, every log p is ≤ 0, and
// the entropy is within [0, log V].
func TestAnalyzeIsConsistent(t *testing.T) {
	tok := tokenizer.NewByte()
	m, err := llm.New(llm.TinyConfig(tok.VocabSize()), llm.Options{Seed: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	rows, err := Analyze(m, tok, "<answer>Up</answer>", 1, tok.VocabSize())
	if err != nil {
		t.Fatal(err)
	}
	logV := math.Log(float64(tok.VocabSize()))
	for i := 1; i < len(rows); i++ {
		r := rows[i]
		if r.LogProb > 1e-6 || r.Entropy < -1e-6 || r.Entropy > logV+1e-4 {
			t.Fatalf("token %d: log p %v, entropy %v", i, r.LogProb, r.Entropy)
		}
		// With k = V the previous row's list holds every token: find this one.
		found := false
		for j, s := range rows[i-1].Top {
			if s == r.Token {
				found = true
				if math.Abs(rows[i-1].TopLogP[j]-r.LogProb) > 1e-4 {
					t.Fatalf("token %d: logits path %v, log-prob path %v", i, rows[i-1].TopLogP[j], r.LogProb)
				}
			}
		}
		if !found {
			t.Fatalf("token %q not among the candidates", r.Token)
		}
	}
}

func TestRunPrintsTable(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), "", "<answer>Up</answer>", 1, 3, &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "sequence log p =") {
		t.Fatalf("output:\n%s", out.String())
	}
	if err := run(context.Background(), t.TempDir(), "x", 1, 3, &out); err == nil {
		t.Fatal("an empty model folder loaded")
	}
}
