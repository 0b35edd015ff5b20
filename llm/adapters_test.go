package llm

import (
	"context"
	"fmt"
	"math"
	"testing"

	"ragen/collapse"
	"ragen/torch"
)

func TestScorer(t *testing.T) {
	m := tinyModel(t, 22, false)
	defer m.Close()
	pairs := []collapse.Pair{
		{Prompt: []int{1, 2, 3}, Reasoning: []int{4, 5}},
		{Prompt: []int{7}, Reasoning: []int{8, 9, 10, 11}},
		{Prompt: []int{1, 2, 3, 4, 5, 6}, Reasoning: nil},
	}
	for _, temp := range []float64{1, 0.5} {
		sc := NewScorerTemperature(m, 2, temp)
		got, err := sc.ScoreReasoning(context.Background(), pairs)
		if err != nil {
			t.Fatal(err)
		}
		// reference: each pair alone, summing TokenLogProbs over the reasoning
		for i, p := range pairs {
			seq := append(append([]int(nil), p.Prompt...), p.Reasoning...)
			s := torch.NewScope()
			ids, pos, attn := batch(t, s, [][]int{seq}, false)
			var lp []float32
			torch.NoGrad(func() error {
				l, _ := m.TokenLogProbs(s, ids, pos, attn, temp, false)
				lp = s.Float32s(l)
				return s.Err()
			})
			want := 0.0
			for t := len(p.Prompt); t < len(seq); t++ {
				want += float64(lp[t])
			}
			s.Close()
			if got[i].Tokens != len(p.Reasoning) || math.Abs(got[i].SumLogProb-want) > 1e-4 {
				t.Errorf("T=%v pair %d: %+v, want sum %v over %d tokens", temp, i, got[i], want, len(p.Reasoning))
			}
		}
	}
	var _ collapse.Scorer = NewScorer(m, 4)
	if _, err := NewScorer(m, 1).ScoreReasoning(context.Background(), []collapse.Pair{{}}); err == nil {
		t.Fatal("empty prompt accepted")
	}
}

func TestMicroBatches(t *testing.T) {
	for _, tc := range []struct {
		lengths []int
		budget  int
		want    string
	}{
		// rows x longest: [5,5]→10 fits 12; adding 3 gives 3x5=15 > 12
		{[]int{5, 5, 3, 2, 2}, 12, "[[0 1] [2 3 4]]"},
		// a row over budget stands alone
		{[]int{20, 1, 1}, 10, "[[0] [1 2]]"},
		{[]int{4, 4, 4, 4}, 16, "[[0 1 2 3]]"},
		// growing longest length: [1,8] → 2x8=16 > 10
		{[]int{1, 8, 2}, 10, "[[0] [1] [2]]"},
		{nil, 10, "[]"},
	} {
		got, err := MicroBatches(tc.lengths, tc.budget)
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(got) != tc.want {
			t.Errorf("MicroBatches(%v, %d) = %v, want %s", tc.lengths, tc.budget, got, tc.want)
		}
	}
	if _, err := MicroBatches([]int{1}, 0); err == nil {
		t.Fatal("zero budget accepted")
	}
}

func TestPadBatch(t *testing.T) {
	s := torch.NewScope()
	defer s.Close()
	ids, pos, attn := PadBatch(s, [][]int{{7, 8, 9}, {5}}, 0, true, torch.CPU)
	if got := fmt.Sprint(s.Int64s(ids), s.Int64s(pos), s.Int64s(attn)); got != "[7 8 9 0 0 5] [0 1 2 0 0 0] [1 1 1 0 0 1]" {
		t.Fatalf("left: %s", got)
	}
	ids, pos, attn = PadBatch(s, [][]int{{7, 8, 9}, {5}}, 2, false, torch.CPU)
	if got := fmt.Sprint(s.Int64s(ids), s.Int64s(pos), s.Int64s(attn)); got != "[7 8 9 5 2 2] [0 1 2 0 0 0] [1 1 1 1 0 0]" {
		t.Fatalf("right: %s", got)
	}
	PadBatch(s, nil, 0, false, torch.CPU)
	if s.Err() == nil {
		t.Fatal("empty batch accepted")
	}
}

// Right and left padding give the same logits at real positions.
func TestPaddingInvariance(t *testing.T) {
	m := tinyModel(t, 23, false)
	defer m.Close()
	seqs := [][]int{{1, 2, 3, 4, 5}, {9, 10}}
	s := torch.NewScope()
	defer s.Close()
	var left, right, alone []float32
	torch.NoGrad(func() error {
		ids, pos, attn := PadBatch(s, seqs, 0, true, torch.CPU)
		left = s.Float32s(m.Forward(s, ids, pos, attn))
		ids, pos, attn = PadBatch(s, seqs, 0, false, torch.CPU)
		right = s.Float32s(m.Forward(s, ids, pos, attn))
		ids, pos, attn = PadBatch(s, seqs[1:], 0, false, torch.CPU)
		alone = s.Float32s(m.Forward(s, ids, pos, attn))
		return nil
	})
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	V := 300
	for j := range 2 { // row 1: left puts its tokens at 3,4; right at 0,1
		for v := range V {
			l, r, a := left[(5+3+j)*V+v], right[(5+j)*V+v], alone[j*V+v]
			if math.Abs(float64(l-a)) > 1e-5 || math.Abs(float64(r-a)) > 1e-5 {
				t.Fatalf("pos %d id %d: left %v right %v alone %v", j, v, l, r, a)
			}
		}
	}
}

func TestScoreSequences(t *testing.T) {
	m := tinyModel(t, 24, false)
	defer m.Close()
	seqs := [][]int{{1, 2, 3, 4, 5, 6}, {7, 8}, {9, 10, 11}, {12}}
	// budget 8: [6] alone (2x6 > 8), then [2,3] (2x3 = 6; +[1] gives 3x3 = 9 > 8), then [1]
	lp, ent, err := m.ScoreSequences(context.Background(), seqs, 8, 0.9, true)
	if err != nil {
		t.Fatal(err)
	}
	for i, q := range seqs {
		s := torch.NewScope()
		ids, pos, attn := batch(t, s, [][]int{q}, false)
		var a, b []float32
		torch.NoGrad(func() error {
			l, e := m.TokenLogProbs(s, ids, pos, attn, 0.9, true)
			a, b = s.Float32s(l), s.Float32s(e)
			return s.Err()
		})
		s.Close()
		if len(lp[i]) != len(q) || len(ent[i]) != len(q) {
			t.Fatalf("seq %d: %d log-probs for %d tokens", i, len(lp[i]), len(q))
		}
		for t2 := range q {
			if math.Abs(float64(a[t2]-lp[i][t2])) > 1e-5 || math.Abs(float64(b[t2]-ent[i][t2])) > 1e-5 {
				t.Fatalf("seq %d t %d: %v/%v vs %v/%v", i, t2, lp[i][t2], ent[i][t2], a[t2], b[t2])
			}
		}
	}
	if _, _, err := m.ScoreSequences(context.Background(), [][]int{{}}, 8, 1, false); err == nil {
		t.Fatal("empty sequence accepted")
	}
}
