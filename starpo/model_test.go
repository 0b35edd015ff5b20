package starpo

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"testing"

	"ragen/env"
	"ragen/env/bandit"
	"ragen/llm/tokenizer"
	"ragen/ragen"
	"ragen/torch"
)

func TestMain(m *testing.M) {
	torch.SetNumThreads(1) // bit-for-bit reproducible CPU runs
	os.Exit(m.Run())
}

// tinyLM is a bigram language model for tests: logits[b,t] =
// E[ids[b,t]]·W + c, so p(ids[b,t+1] | ids[b,≤t]) depends on the previous
// token only. It implements Actor (and LogProber) in float64.
type tinyLM struct {
	emb, out, bias *torch.Tensor // (V,d), (V,d), (V)
}

func newParam(g *torch.Generator, scale float64, shape ...int64) *torch.Tensor {
	var p *torch.Tensor
	err := torch.NoGrad(func() error {
		return withScope(func(s *torch.Scope) error {
			p = s.Escape(s.Contiguous(s.MulS(s.Randn(g, shape, torch.Float64, torch.CPU), scale)))
			return s.Err()
		})
	})
	if err != nil {
		panic(err)
	}
	if err := p.SetRequiresGrad(true); err != nil {
		panic(err)
	}
	return p
}

func newTinyLM(seed uint64, vocab, d int64) *tinyLM {
	g, err := torch.NewGenerator(seed, torch.CPU)
	if err != nil {
		panic(err)
	}
	defer g.Close()
	return &tinyLM{emb: newParam(g, 0.5, vocab, d), out: newParam(g, 0.5, vocab, d), bias: newParam(g, 0.1, vocab)}
}

func (m *tinyLM) Trainable() []*torch.Tensor { return []*torch.Tensor{m.emb, m.out, m.bias} }

func (m *tinyLM) Close() {
	for _, p := range m.Trainable() {
		p.Free()
	}
}

// TokenLogProbs: logp[b,t] = log softmax(z[b,t−1]/temp)[ids[b,t]], 0 at t=0;
// entropy likewise of the distribution at t−1.
func (m *tinyLM) TokenLogProbs(s *torch.Scope, ids, pos, attn *torch.Tensor, temperature float64, withEntropy bool) (*torch.Tensor, *torch.Tensor) {
	B, L := ids.Size(0), ids.Size(1)
	z := s.DivS(s.Linear(s.Embedding(m.emb, ids), m.out, m.bias), temperature) // (B,L,V)
	zp := s.Narrow(z, 1, 0, L-1)                                               // (B,L−1,V)
	lsm := s.LogSoftmax(zp, -1)
	next := s.Unsqueeze(s.Narrow(ids, 1, 1, L-1), -1)
	lp := s.Squeeze(s.Gather(lsm, 2, next), -1) // (B,L−1)
	zero := s.Zeros([]int64{B, 1}, lp.DType(), torch.CPU)
	logp := s.Cat([]*torch.Tensor{zero, lp}, 1)
	if !withEntropy {
		return logp, nil
	}
	h := s.Sub(s.LogSumExp(zp, false, -1), s.Sum(s.Mul(s.Softmax(zp, -1), zp), false, -1))
	return logp, s.Cat([]*torch.Tensor{zero, h}, 1)
}

// tinyCritic is a per-token linear value head on its own embedding.
type tinyCritic struct {
	emb, w, b *torch.Tensor
}

func newTinyCritic(seed uint64, vocab, d int64) *tinyCritic {
	g, err := torch.NewGenerator(seed, torch.CPU)
	if err != nil {
		panic(err)
	}
	defer g.Close()
	return &tinyCritic{emb: newParam(g, 0.5, vocab, d), w: newParam(g, 0.5, 1, d), b: newParam(g, 0.1, 1)}
}

func (c *tinyCritic) Trainable() []*torch.Tensor { return []*torch.Tensor{c.emb, c.w, c.b} }

func (c *tinyCritic) Close() {
	for _, p := range c.Trainable() {
		p.Free()
	}
}

func (c *tinyCritic) Values(s *torch.Scope, ids, pos, attn *torch.Tensor) *torch.Tensor {
	return s.Squeeze(s.Linear(s.Embedding(c.emb, ids), c.w, c.b), -1)
}

// tinyVocab covers the byte tokenizer (256 bytes + 3 specials).
const tinyVocab = 259

var armNames = regexp.MustCompile(`named (\S+) and (\S+)\n`)

// banditScript answers the bandit prompt deterministically: env ids
// alternate between the two arms, so groups have reward variance.
func banditScript(envID, turn int, req ragen.GenRequest) (string, error) {
	m := armNames.FindStringSubmatch(req.Prompt)
	if m == nil {
		return "", fmt.Errorf("no arm names in prompt %q", req.Prompt)
	}
	arm := m[1+envID%2]
	if envID%3 == 2 {
		return "thinking </think> no answer", nil // format penalty, zero reward
	}
	return "pick " + arm + " </think><answer> " + arm + " </answer>", nil
}

// banditProxy builds a rollout over the real Bandit env: groups × size
// training envs and valEnvs validation envs.
func banditProxy(t testing.TB, groups, size, valEnvs int) *ragen.AgentProxy {
	t.Helper()
	tags, err := env.DefaultTags()
	if err != nil {
		t.Fatal(err)
	}
	cfg := ragen.DefaultConfig()
	cfg.CustomEnvs = ragen.SpecsFromTags(tags)
	cfg.ESManager.Train = ragen.EnvSetConfig{EnvGroups: groups, GroupSize: size, EnvConfigs: ragen.EnvConfigs{Tags: []string{"Bandit"}, NGroups: []int{groups}}}
	cfg.ESManager.Val = ragen.EnvSetConfig{EnvGroups: valEnvs, GroupSize: 1, EnvConfigs: ragen.EnvConfigs{Tags: []string{"Bandit"}, NGroups: []int{valEnvs}}}
	cfg.AgentProxy.MaxTurn = 1
	cfg.AgentProxy.MaxActionsPerTurn = 1
	// Each proxy numbers its envs' internal seeds from 0, as a fresh process
	// does upstream (bandit.New uses a process-wide counter), so that two
	// proxies in one test process roll out the same episodes.
	var next int64
	prov := ragen.ProviderFuncs{New: func(tag string, spec ragen.EnvSpec) (env.BaseEnv, error) {
		next++
		return bandit.NewWithInternalSeed(bandit.DefaultConfig(), next-1)
	}}
	a, err := ragen.NewAgentProxy(cfg, tokenizer.NewByte(), prov, &ragen.ScriptedPolicy{Func: banditScript})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Close() })
	return a
}

// recLogger records every logged step.
type recLogger struct {
	steps   []int
	metrics []map[string]float64
	onLog   func(step int)
	closed  bool
}

func (l *recLogger) Log(step int, m map[string]float64) error {
	l.steps = append(l.steps, step)
	l.metrics = append(l.metrics, m)
	if l.onLog != nil {
		l.onLog(step)
	}
	return nil
}

func (l *recLogger) Close() error { l.closed = true; return nil }

// byStep returns the last metrics logged for step (nil if none).
func (l *recLogger) byStep(step int) map[string]float64 {
	var out map[string]float64
	for i, s := range l.steps {
		if s == step {
			out = l.metrics[i]
		}
	}
	return out
}

var _ = context.Background
