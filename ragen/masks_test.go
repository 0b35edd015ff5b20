package ragen

import (
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ragen/llm/tokenizer"
)

// wordTok is a tiny test tokenizer: the specials, "\n" and every maximal
// run of other characters are one token each; ids are assigned on first
// use after the fixed specials (0 pad, 1 <|im_start|>, 2 <|im_end|>).
type wordTok struct {
	mu  sync.Mutex
	ids map[string]int
	str []string
}

func newWordTok() *wordTok {
	t := &wordTok{ids: map[string]int{}}
	for _, s := range []string{"<|endoftext|>", "<|im_start|>", "<|im_end|>"} {
		t.id(s)
	}
	return t
}

func (t *wordTok) id(s string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	if i, ok := t.ids[s]; ok {
		return i
	}
	t.ids[s] = len(t.str)
	t.str = append(t.str, s)
	return len(t.str) - 1
}

func (t *wordTok) Encode(text string) []int {
	var out []int
	for len(text) > 0 {
		switch {
		case strings.HasPrefix(text, "<|im_start|>"):
			out, text = append(out, 1), text[len("<|im_start|>"):]
		case strings.HasPrefix(text, "<|im_end|>"):
			out, text = append(out, 2), text[len("<|im_end|>"):]
		case strings.HasPrefix(text, "<|endoftext|>"):
			out, text = append(out, 0), text[len("<|endoftext|>"):]
		case text[0] == '\n':
			out, text = append(out, t.id("\n")), text[1:]
		default:
			end := len(text)
			for _, s := range []string{"\n", "<|im_start|>", "<|im_end|>", "<|endoftext|>"} {
				if i := strings.Index(text, s); i >= 0 && i < end {
					end = i
				}
			}
			out, text = append(out, t.id(text[:end])), text[end:]
		}
	}
	return out
}

func (t *wordTok) Decode(ids []int) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var b strings.Builder
	for _, i := range ids {
		b.WriteString(t.str[i])
	}
	return b.String()
}
func (t *wordTok) VocabSize() int { return len(t.str) }
func (t *wordTok) TokenID(s string) (int, bool) {
	switch s {
	case "<|endoftext|>", "<|im_start|>", "<|im_end|>":
		return t.id(s), true
	}
	return 0, false
}
func (t *wordTok) EOSIDs() []int { return []int{2} }
func (t *wordTok) PadID() int    { return 0 }
func (t *wordTok) ApplyChatTemplate(msgs []tokenizer.Message, gen bool) (string, error) {
	return tokenizer.RenderQwen25(msgs, gen)
}

func cols(row []int) []int {
	var c []int
	for j, v := range row {
		if v != 0 {
			c = append(c, j)
		}
	}
	return c
}

func scoreCols(row []float32) map[int]float32 {
	m := map[int]float32{}
	for j, v := range row {
		if v != 0 {
			m[j] = v
		}
	}
	return m
}

// TestRowMasks checks masks and reward columns token by token on a
// hand-built conversation. With wordTok the rendered chat
//
//	sys "S", user "U1", assistant "A1", user "U2", assistant "A2"
//
// is 30 tokens (5 messages × [<|im_start|>, role, \n, content, <|im_end|>, \n]):
//
//	 0 IS  1 system     2 \n  3 S   4 IE  5 \n     ti = 1
//	 6 IS  7 user       8 \n  9 U1 10 IE 11 \n     ti = 2
//	12 IS 13 assistant 14 \n 15 A1 16 IE 17 \n     ti = 3
//	18 IS 19 user      20 \n 21 U2 22 IE 23 \n     ti = 4
//	24 IS 25 assistant 26 \n 27 A2 28 IE 29 \n     ti = 5
//
// left-padded by 2 (L = 32); mask/score column j stands for predicting
// token j+1, so token p is column p−1 and with the pad p+1.
func TestRowMasks(t *testing.T) {
	tok := newWordTok()
	msgs := []tokenizer.Message{{Role: "system", Content: "S"}, {Role: "user", Content: "U1"}, {Role: "assistant", Content: "A1"}, {Role: "user", Content: "U2"}, {Role: "assistant", Content: "A2"}}
	text, err := tok.ApplyChatTemplate(msgs, false)
	require.NoError(t, err)
	r := tok.Encode(text)
	require.Len(t, r, 30)
	const pad = 2
	turns := []Reward{{Value: 0.5}, {Value: 2}}
	rng := func(a, b int) []int { // columns a..b inclusive
		var c []int
		for j := a; j <= b; j++ {
			c = append(c, j)
		}
		return c
	}
	cat := func(xs ...[]int) []int {
		var c []int
		for _, x := range xs {
			c = append(c, x...)
		}
		return c
	}
	tests := []struct {
		name                  string
		legacy, turnScores    bool
		respMaskOff, lastOnly bool
		mode                  string
		dropped               int
		turns                 []Reward
		resp, loss            []int
		scores                map[int]float32
	}{
		// Sane: generated tokens are A1, IE(16), A2, IE(28) → columns of
		// tokens 15,16,27,28 = 16,17,28,29 (with pad). Reward on the column
		// predicting the last IE: 29.
		{name: "sane full", resp: []int{16, 17, 28, 29}, loss: []int{16, 17, 28, 29}, scores: map[int]float32{29: 7}},
		// Turn scores: turn 1 on the column predicting IE 16 (17), turn 2 on 29.
		{name: "sane turn scores", turnScores: true, resp: []int{16, 17, 28, 29}, loss: []int{16, 17, 28, 29}, scores: map[int]float32{17: 0.5, 29: 2}},
		// enable_response_mask=false: every target after the system turn:
		// tokens 6..29 → columns 7..30.
		// Truncation removed turn 0 of three: its reward joins the first kept
		// turn (0.5 + 2 on column 17), the last turn's 3 on column 29.
		{name: "sane turn scores after truncation", turnScores: true, dropped: 1, turns: []Reward{{Value: 0.5}, {Value: 2}, {Value: 3}}, resp: []int{16, 17, 28, 29}, loss: []int{16, 17, 28, 29}, scores: map[int]float32{17: 2.5, 29: 3}},
		{name: "sane no response mask", respMaskOff: true, resp: []int{16, 17, 28, 29}, loss: rng(7, 30), scores: map[int]float32{29: 7}},
		// Turn-level modes: only the last assistant turn.
		{name: "sane last only", lastOnly: true, mode: ModeLimitedMultiTurn, resp: []int{28, 29}, loss: []int{28, 29}, scores: map[int]float32{29: 7}},
		// Upstream: column j = (ti[j] odd, > 1) on unshifted positions:
		// tokens 12..17 and 24..28 (29 is cut) → columns 14..19, 26..30.
		// Score at the last column (L−2 = 30).
		{name: "legacy full", legacy: true, resp: cat(rng(14, 19), rng(26, 30)), loss: cat(rng(14, 19), rng(26, 30)), scores: map[int]float32{30: 7}},
		// Upstream turn scores: on IE with ti 3 (token 16) and 5 (token 28),
		// rolled right by one (17, 29) then column 0 dropped: columns 16+2−1+1.
		{name: "legacy turn scores", legacy: true, turnScores: true, resp: cat(rng(14, 19), rng(26, 30)), loss: cat(rng(14, 19), rng(26, 30)), scores: map[int]float32{18: 0.5, 30: 2}},
		// Upstream without response mask: ti > 1 → tokens 6..28 → columns 8..30.
		{name: "legacy no response mask", legacy: true, respMaskOff: true, resp: cat(rng(14, 19), rng(26, 30)), loss: rng(8, 30), scores: map[int]float32{30: 7}},
		// Upstream turn-level: from (last IS index − 1) = token 23 → column
		// 25 to the end.
		{name: "legacy last only", legacy: true, lastOnly: true, mode: ModeLimitedMultiTurn, resp: rng(25, 30), loss: rng(25, 30), scores: map[int]float32{30: 7}},
		// single_turn keys on the 3rd IS (token 12) → column 13 onwards.
		{name: "legacy single turn", legacy: true, lastOnly: true, mode: ModeSingleTurn, resp: rng(13, 30), loss: rng(13, 30), scores: map[int]float32{30: 7}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.Compat.MaskAlignment = tc.legacy
			cfg.AgentProxy.UseTurnScores = tc.turnScores
			cfg.EnableResponseMask = !tc.respMaskOff
			if tc.mode != "" {
				cfg.AgentProxy.ContextWindowMode = tc.mode
			}
			cm := &ContextManager{cfg: cfg, tok: tok}
			mt, err := cm.modelTokens()
			require.NoError(t, err)
			tt := turns
			if tc.turns != nil {
				tt = tc.turns
			}
			resp, loss, sc := cm.rowMasks(mt, r, pad, sample{turns: tt, dropped: tc.dropped, lastOnly: tc.lastOnly}, 7)
			require.Len(t, resp, 31)
			assert.Equal(t, tc.resp, cols(resp), "response mask")
			assert.Equal(t, tc.loss, cols(loss), "loss mask")
			assert.Equal(t, tc.scores, scoreCols(sc), "scores")
		})
	}
}

func TestUnsupportedModel(t *testing.T) {
	cm := &ContextManager{cfg: DefaultConfig(), tok: &fakeNoChat{newWordTok()}}
	_, err := cm.BuildBatch(nil)
	assert.ErrorContains(t, err, "Unsupported model")
}

type fakeNoChat struct{ *wordTok }

func (*fakeNoChat) TokenID(string) (int, bool) { return 0, false }

func TestNormalizeScores(t *testing.T) {
	// Episodes: groups 0,0,1,1 (tags A,A,B,B), scores 1,3,2,2.
	outs := []*EnvOutput{{GroupID: 0, Tag: "A"}, {GroupID: 0, Tag: "A"}, {GroupID: 1, Tag: "B"}, {GroupID: 1, Tag: "B"}}
	x := []float32{1, 3, 2, 2}
	// group 0: μ=2, σ(n−1)=√2 → ±1/(√2+1e-6) = ±0.7071063; group 1: σ=0 → 0.
	s2 := float32(1 / (1.4142135623730951 + 1e-6))
	tests := []struct {
		grouping, method string
		want             []float32
	}{
		{"state", "identity", []float32{1, 3, 2, 2}},
		{"state", "mean", []float32{-1, 1, 0, 0}},
		{"state", "mean_std", []float32{-s2, s2, 0, 0}},
		{"inductive", "mean_std", []float32{-s2, s2, 0, 0}},
		// batch: μ=2, σ=√(2/3)=0.8164966 → (x−2)/(σ+1e-6).
		{"batch", "mean_std", []float32{float32(-1 / (0.816496580927726 + 1e-6)), float32(1 / (0.816496580927726 + 1e-6)), 0, 0}},
		// asym_clip clamps to [−1, 3]: −1.2247 → −1.
		{"batch", "asym_clip", []float32{-1, float32(1 / (0.816496580927726 + 1e-6)), 0, 0}},
	}
	for _, tc := range tests {
		t.Run(tc.grouping+"/"+tc.method, func(t *testing.T) {
			got, err := normalizeScores(x, outs, RewardNormalizationConfig{Grouping: tc.grouping, Method: tc.method})
			require.NoError(t, err)
			assert.InDeltaSlice(t, tc.want, got, 1e-6)
		})
	}
	// As many groups as episodes → no normalisation at all.
	got, err := normalizeScores([]float32{1, 5}, []*EnvOutput{{GroupID: 0}, {GroupID: 1}}, RewardNormalizationConfig{Grouping: "state", Method: "mean_std"})
	require.NoError(t, err)
	assert.Equal(t, []float32{1, 5}, got)
	// One singleton group among larger ones: std is NaN → 0.
	got, err = normalizeScores([]float32{1, 3, 9}, []*EnvOutput{{GroupID: 0}, {GroupID: 0}, {GroupID: 1}}, RewardNormalizationConfig{Grouping: "state", Method: "mean_std"})
	require.NoError(t, err)
	assert.InDeltaSlice(t, []float32{-s2, s2, 0}, got, 1e-6)
	_, err = normalizeScores(x, outs, RewardNormalizationConfig{Grouping: "env", Method: "mean"})
	assert.ErrorContains(t, err, `grouping "env"`)
}

func TestPadLeft(t *testing.T) {
	ids, mask, pos := PadLeft([][]int{{5, 6, 7}, {8}}, 0)
	assert.Equal(t, [][]int{{5, 6, 7}, {0, 0, 8}}, ids)
	assert.Equal(t, [][]int{{1, 1, 1}, {0, 0, 1}}, mask)
	assert.Equal(t, [][]int{{0, 1, 2}, {0, 0, 0}}, pos)
}

var _ = fmt.Sprint

// TestNormalizeScoresFloat32: upstream normalises float32 tensors, so the
// group mean and std are float32 values and (x − μ)/(σ + 1e-6) is computed
// with float32 operations. x = [−1, 1.9, 0.9] (float32): Σ = 1.8 exactly
// (float32 1.9 − 1 = float32 0.9), μ = f32(1.8/3), σ = f32(√(Σ(x−μ)²/2)) =
// 1.4730920, and the third value is f32(f32(0.9 − μ) / f32(σ + 1e-6)) =
// 0.20365316 (0x3E508A74); computing in float64 and rounding once would
// give 0.20365313 (0x3E508A72).
func TestNormalizeScoresFloat32(t *testing.T) {
	x := []float32{-1, 1.9, 0.9}
	outs := []*EnvOutput{{}, {}, {}}
	got, err := normalizeScores(x, outs, RewardNormalizationConfig{Grouping: "batch", Method: "mean_std"})
	require.NoError(t, err)
	assert.Equal(t, uint32(0x3E508A74), math.Float32bits(got[2]), "%v", got[2])
	assert.Equal(t, float32(-1.08615005), got[0])
	assert.Equal(t, float32(0.88249689), got[1])
}
