package llm

import (
	"context"
	"fmt"
	"math"
	"testing"

	"ragen/torch"
)

// multiTurn plays a scripted multi-turn dialogue: every turn each row's
// next prompt is built by next from its previous prompt and answer; rows
// 0-2 and 3-4 start from identical prompts (two GRPO groups). It returns
// every turn's results.
func multiTurn(t *testing.T, m *Model, opt GenOptions, turns int, next func(row, turn int, prev, ans []int) []int) [][]GenResult {
	t.Helper()
	prompts := [][]int{
		{1, 2, 3, 4, 5, 6, 7, 8, 9}, {1, 2, 3, 4, 5, 6, 7, 8, 9}, {1, 2, 3, 4, 5, 6, 7, 8, 9},
		{20, 21, 22, 23}, {20, 21, 22, 23}, {40, 41},
	}
	var out [][]GenResult
	for turn := range turns {
		o := opt
		if o.PrefixKeys != nil {
			o.PrefixKeys = make([]string, len(prompts))
			for i := range prompts {
				o.PrefixKeys[i] = fmt.Sprint("traj", i)
			}
		}
		if o.RowSeeds != nil {
			o.RowSeeds = make([]uint64, len(prompts))
			for i := range prompts {
				o.RowSeeds[i] = uint64(100*turn + i)
			}
		}
		res, err := m.Generate(context.Background(), nil, prompts, o)
		if err != nil {
			t.Fatalf("turn %d: %v", turn, err)
		}
		out = append(out, res)
		for i := range prompts {
			prompts[i] = next(i, turn, prompts[i], res[i].IDs)
		}
	}
	return out
}

// fullHistory appends the answer and an observation; row 1 re-tokenizes
// its answer (its last id replaced), so its entry matches only up to there.
func fullHistory(row, turn int, prev, ans []int) []int {
	p := append(append([]int(nil), prev...), ans...)
	if row == 1 && len(ans) > 1 {
		p[len(p)-1] = (p[len(p)-1] + 1) % 250
	}
	for k := range 3 + row {
		p = append(p, 100+10*turn+k)
	}
	return p
}

// window keeps a fixed head and the last answer and observation (the
// limited context window: what precedes the head's end changes each turn).
func window(row, turn int, prev, ans []int) []int {
	p := []int{1, 2, 3}
	p = append(p, ans...)
	for k := range 2 + row {
		p = append(p, 150+10*turn+k)
	}
	return p
}

// single keeps the head and a new observation only (single-turn mode).
func single(row, turn int, prev, ans []int) []int {
	p := []int{1, 2, 3}
	for k := range 4 {
		p = append(p, 200+10*turn+k+row)
	}
	return p
}

func sameTurns(t *testing.T, what string, got, want [][]GenResult, tol float64) {
	t.Helper()
	for turn := range want {
		for i := range want[turn] {
			a, b := got[turn][i], want[turn][i]
			if fmt.Sprint(a.IDs) != fmt.Sprint(b.IDs) || a.FinishReason != b.FinishReason {
				t.Errorf("%s turn %d row %d: ids %v (%s), without reuse %v (%s)", what, turn, i, a.IDs, a.FinishReason, b.IDs, b.FinishReason)
				continue
			}
			for j := range a.LogProbs {
				if d := math.Abs(a.LogProbs[j] - b.LogProbs[j]); d > tol {
					t.Errorf("%s turn %d row %d token %d: log-prob %v, without reuse %v", what, turn, i, j, a.LogProbs[j], b.LogProbs[j])
				}
			}
		}
	}
}

// With prefix reuse (across turns and within groups) generation gives the
// tokens and log-probs (to float rounding) of full prefill, in float32,
// bf16 and with LoRA, greedy and with per-row sampling streams, in the
// three context-window shapes, with rows that stop early; and it prefills
// fewer tokens.
func TestPrefixReuseEqualsFullPrefill(t *testing.T) {
	histories := map[string]func(int, int, []int, []int) []int{"full": fullHistory, "limited": window, "single": single}
	for _, variant := range []string{"float32", "bf16", "lora"} {
		m := tinyModel(t, 41, false)
		tol := 1e-4
		switch variant {
		case "bf16":
			m.opt.ComputeDType = torch.BFloat16
			tol = 0.05
		case "lora":
			if err := m.EnableLoRA(LoRAConfig{Rank: 4, Alpha: 8, Targets: ParseTargets("all-linear"), Seed: 1}); err != nil {
				t.Fatal(err)
			}
			s := torch.NewScope()
			g, _ := torch.NewGenerator(9, torch.CPU)
			_ = torch.NoGrad(func() error {
				for _, p := range m.LoRAParams() {
					s.CopyInto(p.T, s.Add(p.T, s.MulS(s.Randn(g, p.T.Shape(), torch.Float32, torch.CPU), 0.2)))
				}
				return nil
			})
			g.Close()
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
		}
		for mode, next := range histories {
			for _, sampled := range []bool{false, true} {
				opt := GenOptions{MaxNewTokens: 5, IgnoreEOS: true, StopIDs: []int{7, 77, 177}}
				if sampled {
					opt.Temperature, opt.RowSeeds = 1, []uint64{}
				}
				what := fmt.Sprintf("%s %s sampled=%v", variant, mode, sampled)
				offCache := NewPrefixCache(0)
				off := opt
				off.NoPrefixCaching, off.Prefix, off.PrefixKeys = true, offCache, []string{}
				want := multiTurn(t, m, off, 4, next)
				onCache := NewPrefixCache(0)
				on := opt
				on.Prefix, on.PrefixKeys = onCache, []string{}
				got := multiTurn(t, m, on, 4, next)
				sameTurns(t, what, got, want, tol)
				if n, _ := offCache.Len(); n != 0 {
					t.Errorf("%s: %d entries stored with prefix caching off", what, n)
				}
				so, sn := offCache.Stats(), onCache.Stats()
				if sn.ReusedTokens == 0 || sn.SharedTokens == 0 || sn.PrefilledTokens >= so.PrefilledTokens || so.PromptTokens != sn.PromptTokens {
					t.Errorf("%s: reuse did not skip work: on %+v, off %+v", what, sn, so)
				}
				offCache.Close()
				onCache.Close()
			}
		}
		m.Close()
	}
}

// Only identical prompts of one call share their prefill (no cache):
// followers get the leader's KV and logits and then decode on their own
// (per-row streams), as they would alone.
func TestGroupPromptSharing(t *testing.T) {
	m := tinyModel(t, 42, false)
	defer m.Close()
	prompts := [][]int{{5, 6, 7, 8}, {1, 2}, {5, 6, 7, 8}, {5, 6, 7, 8}, {1, 2}}
	opt := GenOptions{MaxNewTokens: 6, IgnoreEOS: true, Temperature: 1, RowSeeds: []uint64{1, 2, 3, 4, 5}}
	c := NewPrefixCache(0)
	defer c.Close()
	on := opt
	on.Prefix = c
	got, err := m.Generate(context.Background(), nil, prompts, on)
	if err != nil {
		t.Fatal(err)
	}
	off := opt
	off.NoPrefixCaching = true
	want, err := m.Generate(context.Background(), nil, prompts, off)
	if err != nil {
		t.Fatal(err)
	}
	for i := range prompts {
		sameResult(t, fmt.Sprint("prompt ", i), got[i], want[i])
	}
	// 2 prompts ran, in one chunk of 2 rows x 4 slots ({1,2} left-padded); 3 copied
	st := c.Stats()
	if st.SharedTokens != 4+4+2 || st.PrefilledTokens != 2*4 || st.ReusedTokens != 0 {
		t.Errorf("stats %+v", st)
	}
	if n, _ := c.Len(); n != 0 {
		t.Errorf("%d entries stored without keys", n)
	}
	// one generator for the batch: rows are back in prompt order before
	// the first draw, so the draws are those of a call without sharing
	// (the longer prompt runs first: the rows are out of prompt order)
	opt.RowSeeds, opt.Seed = nil, 11
	on, off = opt, opt
	off.NoPrefixCaching = true
	prompts = [][]int{{1, 2}, {5, 6, 7, 8}, {1, 2}, {5, 6, 7, 8}}
	if got, err = m.Generate(context.Background(), nil, prompts, on); err != nil {
		t.Fatal(err)
	}
	if want, err = m.Generate(context.Background(), nil, prompts, off); err != nil {
		t.Fatal(err)
	}
	for i := range prompts {
		sameResult(t, fmt.Sprint("shared generator, prompt ", i), got[i], want[i])
	}
}

// A prompt whose history re-tokenized differently reuses only the common
// prefix of the ids; the entry then covers the new prompt and its answer.
func TestPrefixDivergingRetokenization(t *testing.T) {
	m := tinyModel(t, 43, false)
	defer m.Close()
	c := NewPrefixCache(0)
	defer c.Close()
	opt := GenOptions{MaxNewTokens: 4, IgnoreEOS: true, Prefix: c, PrefixKeys: []string{"a"}}
	first := []int{1, 2, 3, 4, 5, 6}
	res, err := m.Generate(context.Background(), nil, [][]int{first}, opt)
	if err != nil {
		t.Fatal(err)
	}
	// the entry covers the prompt and the answer but its last id
	covered := append(append([]int(nil), first...), res[0].IDs[:3]...)
	if got := c.Cached("a"); fmt.Sprint(got) != fmt.Sprint(covered) {
		t.Fatalf("entry %v, want %v", got, covered)
	}
	// the re-rendered history differs from the generated ids at index 7
	second := append(append([]int(nil), covered...), 9, 9)
	second[7] = (second[7] + 1) % 250
	before := c.Stats()
	got, err := m.Generate(context.Background(), nil, [][]int{second}, opt)
	if err != nil {
		t.Fatal(err)
	}
	st := c.Stats()
	if r := st.ReusedTokens - before.ReusedTokens; r != 7 {
		t.Errorf("reused %d tokens, want the 7 of the common prefix", r)
	}
	if p := st.PrefilledTokens - before.PrefilledTokens; p != int64(len(second)-7) {
		t.Errorf("prefilled %d tokens, want %d", p, len(second)-7)
	}
	off := opt
	off.NoPrefixCaching = true
	want, err := m.Generate(context.Background(), nil, [][]int{second}, off)
	if err != nil {
		t.Fatal(err)
	}
	sameResult(t, "diverged", got[0], want[0])
	// a prompt equal to the entry reuses all but its last token
	st = c.Stats()
	if _, err := m.Generate(context.Background(), nil, [][]int{c.Cached("a")}, opt); err != nil {
		t.Fatal(err)
	}
	if p := c.Stats().PrefilledTokens - st.PrefilledTokens; p != 1 {
		t.Errorf("prefilled %d tokens of a fully cached prompt, want 1", p)
	}
}

// The cap bounds the cached tokens: the least recently used entries go
// first, an entry longer than the cap is not kept, and Close frees every
// tensor.
func TestPrefixCacheEvicts(t *testing.T) {
	live := torch.Live()
	m := tinyModel(t, 44, false)
	c := NewPrefixCache(20)
	gen := func(key string, p []int) {
		t.Helper()
		if _, err := m.Generate(context.Background(), nil, [][]int{p}, GenOptions{MaxNewTokens: 3, IgnoreEOS: true, Prefix: c, PrefixKeys: []string{key}}); err != nil {
			t.Fatal(err)
		}
	}
	gen("a", []int{1, 2, 3, 4}) // 4+2 = 6 tokens
	gen("b", []int{5, 6, 7, 8}) // 12
	gen("c", []int{9, 10, 11})  // 17
	if n, tok := c.Len(); n != 3 || tok != 17 {
		t.Fatalf("%d entries, %d tokens", n, tok)
	}
	gen("a", c.Cached("a")) // a used again (and grown to 6+2 = 8): b is now the oldest
	if n, tok := c.Len(); n != 3 || tok != 19 {
		t.Fatalf("%d entries, %d tokens", n, tok)
	}
	gen("d", []int{12, 13, 14, 15, 16}) // 7 tokens: b (6) goes
	if c.Cached("b") != nil || c.Cached("a") == nil || c.Cached("c") == nil || c.Cached("d") == nil {
		t.Fatalf("evicted the wrong entry: a %v b %v c %v d %v", c.Cached("a"), c.Cached("b"), c.Cached("c"), c.Cached("d"))
	}
	if st := c.Stats(); st.Evictions != 1 {
		t.Fatalf("%d evictions", st.Evictions)
	}
	if _, tok := c.Len(); tok > 20 {
		t.Fatalf("%d tokens over the cap", tok)
	}
	long := make([]int, 30)
	for i := range long {
		long[i] = i + 1
	}
	gen("e", long) // longer than the cap: not kept, the others stay
	if c.Cached("e") != nil || c.Cached("d") == nil {
		t.Fatal("an entry over the cap was kept or displaced others")
	}
	c.Close()
	if _, err := m.Generate(context.Background(), nil, [][]int{{1}}, GenOptions{MaxNewTokens: 1, Prefix: c, PrefixKeys: []string{"a"}}); err == nil {
		t.Fatal("a closed cache was used")
	}
	m.Close()
	if n := torch.Live(); n != live {
		t.Fatalf("%d live tensors after Close, %d before", n, live)
	}
	other := tinyModel(t, 45, false)
	defer other.Close()
	c2 := NewPrefixCache(0)
	defer c2.Close()
	m2 := tinyModel(t, 46, false)
	defer m2.Close()
	if _, err := m2.Generate(context.Background(), nil, [][]int{{1}}, GenOptions{MaxNewTokens: 1, Prefix: c2}); err != nil {
		t.Fatal(err)
	}
	if _, err := other.Generate(context.Background(), nil, [][]int{{1}}, GenOptions{MaxNewTokens: 1, Prefix: c2}); err == nil {
		t.Fatal("a cache served two models")
	}
	if _, err := m2.Generate(context.Background(), nil, [][]int{{1}}, GenOptions{MaxNewTokens: 1, PrefixKeys: []string{"a", "b"}}); err == nil {
		t.Fatal("2 keys for 1 prompt accepted")
	}
}
