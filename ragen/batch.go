package ragen

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"ragen/llm/tokenizer"
)

// Batch is the training batch of one rollout (spec §5) as plain Go slices;
// the trainer turns it into tensors. B rows, L = padded length; the
// per-position columns of LossMask, ResponseMask and the scores are the
// L−1 positions of Responses = InputIDs[:, 1:], position j standing for the
// prediction of token j+1.
type Batch struct {
	InputIDs         [][]int     // [B][L] left-padded
	AttentionMask    [][]int     // [B][L]
	PositionIDs      [][]int     // [B][L] max(cumsum(mask)−1, 0)
	Responses        [][]int     // [B][L−1]
	LossMask         [][]int     // [B][L−1]
	ResponseMask     [][]int     // [B][L−1]
	RMScores         [][]float32 // [B][L−1] token-level scores (normalised)
	OriginalRMScores [][]float32 // [B][L−1] copy of RMScores (post-normalisation, as upstream; before it with Config.FilterRawScores)

	EnvIDs     []int
	GroupIDs   []int
	Tags       []string
	EpisodeIDs []int // turn-level modes: index of the episode (env) in Episodes; full: = row
	UIDs       []int // = env id
	Messages   [][]tokenizer.Message

	// Episodes are the final cache entries, one per env (history, metrics).
	Episodes []*EnvOutput
	// EpisodeScores is each episode's score after penalty and normalisation.
	EpisodeScores []float32
	// Metrics are the batch metrics of spec §3.9.
	Metrics map[string]float64
	// GenMetrics are the policy's own metrics of the rollout
	// (RolloutScoped), of this rank only: generation timings and prefix
	// cache counters. They stay out of Metrics, which depend only on the
	// trajectories.
	GenMetrics map[string]float64
	// Collapse holds the collapse-diagnostics data when the rollout asked
	// for it (full mode only); nil otherwise.
	Collapse *CollapseData
}

// Len is the number of rows.
func (b *Batch) Len() int { return len(b.InputIDs) }

// sample is one training sequence before tokenisation.
type sample struct {
	episode  int
	msgs     []tokenizer.Message
	turns    []Reward // per-turn rewards (turn scores)
	dropped  int      // leading turns removed by truncation (sane mode)
	lastOnly bool     // turn-level modes: train only the last assistant turn
	maxTurns int      // most turns of any sample in the batch (upstream's zip_longest)
}

// modelTokens are the ids the masks key on.
type modelTokens struct {
	start, end int    // <|im_start|>/<|im_end|> or Llama-3 start_header/eot
	header     string // assistant header text, e.g. "<|im_start|>assistant\n"
	qwen       bool
}

func (c *ContextManager) modelTokens() (modelTokens, error) {
	if s, ok := c.tok.TokenID("<|im_start|>"); ok {
		e, ok := c.tok.TokenID("<|im_end|>")
		if !ok {
			return modelTokens{}, fmt.Errorf("ragen: Unsupported model: tokenizer has <|im_start|> but no <|im_end|>")
		}
		return modelTokens{start: s, end: e, header: "<|im_start|>assistant\n", qwen: true}, nil
	}
	if s, ok := c.tok.TokenID("<|start_header_id|>"); ok {
		e, ok := c.tok.TokenID("<|eot_id|>")
		if !ok {
			return modelTokens{}, fmt.Errorf("ragen: Unsupported model: tokenizer has <|start_header_id|> but no <|eot_id|>")
		}
		return modelTokens{start: s, end: e, header: "<|start_header_id|>assistant<|end_header_id|>\n\n"}, nil
	}
	return modelTokens{}, fmt.Errorf("ragen: Unsupported model: the tokenizer has neither Qwen (<|im_start|>) nor Llama-3 (<|start_header_id|>) chat tokens")
}

// trainingHistory drops a trailing state-only entry.
func trainingHistory(h []HistoryEntry) []HistoryEntry {
	if len(h) > 0 && !h[len(h)-1].Acted {
		return h[:len(h)-1]
	}
	return h
}

// BuildBatch turns the final env states into the training batch
// (formulate_rollouts, spec §3.5–3.9).
func (c *ContextManager) BuildBatch(outs []*EnvOutput) (*Batch, error) {
	mt, err := c.modelTokens()
	if err != nil {
		return nil, err
	}
	var samples []sample
	mode := c.cfg.AgentProxy.ContextWindowMode
	k, limited := c.window()
	for ei, o := range outs {
		hist := trainingHistory(o.History)
		var turns []Reward
		for _, h := range hist {
			if h.Acted {
				turns = append(turns, h.Reward)
			}
		}
		switch mode {
		case ModeFull:
			l := c.multiTurn(o.Tag, hist, 0, false, false)
			d, err := c.truncate(l, false)
			if err != nil {
				return nil, fmt.Errorf("ragen: env %d: %w", o.EnvID, err)
			}
			samples = append(samples, sample{episode: ei, msgs: l.msgs, turns: turns, dropped: d})
		case ModeSingleTurn:
			for t, h := range hist {
				if !h.Acted {
					continue
				}
				reply := h.LLMResponse
				msgs, err := c.singleTurn(o.Tag, hist, t, 0, false, &reply)
				if err != nil {
					return nil, fmt.Errorf("ragen: env %d: %w", o.EnvID, err)
				}
				samples = append(samples, sample{episode: ei, msgs: msgs, lastOnly: true})
			}
		case ModeLimitedMultiTurn:
			for t, h := range hist {
				if !h.Acted {
					continue
				}
				s := 0
				if limited {
					s = max(0, t-k+1) // t+1 for k = 0: an empty window
				}
				l := c.multiTurn(o.Tag, hist[s:t+1], s, false, false)
				if _, err := c.truncate(l, false); err != nil {
					return nil, fmt.Errorf("ragen: env %d: %w", o.EnvID, err)
				}
				samples = append(samples, sample{episode: ei, msgs: l.msgs, lastOnly: true})
			}
		}
	}
	if len(samples) == 0 {
		return nil, fmt.Errorf("ragen: build batch: no samples (no env produced a response)")
	}

	// Episode scores: Σ turn rewards + penalty, normalised (spec §3.8).
	scores := make([]float32, len(outs))
	for i, o := range outs {
		sum := 0.0
		for _, h := range trainingHistory(o.History) {
			if h.Acted {
				sum += h.Reward.Value
			}
		}
		scores[i] = float32(sum)
		if !c.cfg.AgentProxy.UseTurnScores || mode != ModeFull {
			scores[i] += float32(o.Penalty)
		}
	}
	raw := scores // normalizeScores returns a new slice
	if !(c.cfg.AgentProxy.UseTurnScores && mode == ModeFull) {
		scores, err = normalizeScores(scores, outs, c.cfg.AgentProxy.RewardNormalization)
		if err != nil {
			return nil, err
		}
	}

	maxTurns := 0
	for _, s := range samples {
		maxTurns = max(maxTurns, len(s.turns))
	}
	for i := range samples {
		samples[i].maxTurns = maxTurns
	}
	b := &Batch{Episodes: outs, EpisodeScores: scores}
	rows := make([][]int, len(samples))
	for i, s := range samples {
		text, err := c.tok.ApplyChatTemplate(s.msgs, false)
		if err != nil {
			return nil, fmt.Errorf("ragen: chat template: %w", err)
		}
		rows[i] = c.tok.Encode(text)
		o := outs[s.episode]
		b.EnvIDs = append(b.EnvIDs, o.EnvID)
		b.GroupIDs = append(b.GroupIDs, o.GroupID)
		b.Tags = append(b.Tags, o.Tag)
		b.EpisodeIDs = append(b.EpisodeIDs, s.episode)
		b.UIDs = append(b.UIDs, o.EnvID)
		b.Messages = append(b.Messages, s.msgs)
	}
	b.InputIDs, b.AttentionMask, b.PositionIDs = PadLeft(rows, c.tok.PadID())
	L := len(b.InputIDs[0])
	for i, s := range samples {
		pad := L - len(rows[i])
		resp, loss, score := c.rowMasks(mt, rows[i], pad, s, scores[s.episode])
		b.Responses = append(b.Responses, b.InputIDs[i][1:])
		b.ResponseMask = append(b.ResponseMask, resp)
		b.LossMask = append(b.LossMask, loss)
		b.RMScores = append(b.RMScores, score)
		orig := append([]float32(nil), score...)
		if c.cfg.FilterRawScores {
			_, _, orig = c.rowMasks(mt, rows[i], pad, s, raw[s.episode])
		}
		b.OriginalRMScores = append(b.OriginalRMScores, orig)
	}
	b.Metrics = batchMetrics(outs, c.cfg.envSet(c.mode), b.ResponseMask)
	return b, nil
}

// PadLeft left-pads rows to the longest length with pad and returns ids,
// attention mask and position ids (max(cumsum(mask)−1, 0)).
func PadLeft(rows [][]int, pad int) (ids, mask, pos [][]int) {
	L := 0
	for _, r := range rows {
		L = max(L, len(r))
	}
	for _, r := range rows {
		id := make([]int, L)
		m := make([]int, L)
		p := make([]int, L)
		off := L - len(r)
		for j := 0; j < off; j++ {
			id[j] = pad
		}
		copy(id[off:], r)
		for j := off; j < L; j++ {
			m[j] = 1
			p[j] = j - off
		}
		ids, mask, pos = append(ids, id), append(mask, m), append(pos, p)
	}
	return ids, mask, pos
}

// rowMasks computes the (L−1)-wide response mask, loss mask and scores of
// one left-padded row (unpadded ids r, pad columns before it).
func (c *ContextManager) rowMasks(mt modelTokens, r []int, pad int, s sample, score float32) (resp, loss []int, sc []float32) {
	n := len(r)
	L := n + pad
	resp = make([]int, L-1)
	loss = make([]int, L-1)
	sc = make([]float32, L-1)
	// ti[p]: number of turn-start tokens up to and including p.
	ti := make([]int, n)
	cnt := 0
	var starts []int
	for p, id := range r {
		if id == mt.start {
			cnt++
			starts = append(starts, p)
		}
		ti[p] = cnt
	}
	useTurn := c.cfg.AgentProxy.UseTurnScores && !s.lastOnly
	if c.cfg.Compat.MaskAlignment {
		c.legacyMasks(mt, r, pad, s, score, ti, starts, resp, loss, sc, useTurn)
		return resp, loss, sc
	}
	// gen[p]: token p was generated by the assistant (after the role header,
	// up to and including the end token). ends[i]: end token of assistant
	// turn i (counting assistant turns in this row).
	gen := make([]bool, n)
	var ends []int
	assistantStarts := 0
	for si, p := range starts {
		if ti[p]%2 != 1 || ti[p] <= 1 {
			continue
		}
		assistantStarts++
		if s.lastOnly && si != len(starts)-1 {
			continue
		}
		q := c.skipHeader(r, p, mt.header)
		end := -1
		for ; q < n; q++ {
			if r[q] == mt.start {
				break
			}
			gen[q] = true
			if r[q] == mt.end {
				end = q
				break
			}
		}
		ends = append(ends, end)
	}
	for j := 0; j < n-1; j++ {
		col := pad + j
		if gen[j+1] {
			resp[col] = 1
		}
		if c.cfg.EnableResponseMask {
			loss[col] = resp[col]
		} else if ti[j+1] > 1 {
			loss[col] = 1
		}
	}
	col := func(end int) int { // score column of the token predicting end
		if end < 1 {
			return L - 2
		}
		return pad + end - 1
	}
	if !useTurn {
		last := -1
		if len(ends) > 0 {
			last = ends[len(ends)-1]
		}
		sc[col(last)] = score
		return resp, loss, sc
	}
	// Turn scores: rewards of turns removed by truncation go to the first
	// kept turn so the episode total is preserved.
	for i, rw := range s.turns {
		k := i - s.dropped
		if k < 0 {
			k = 0
		}
		if k < len(ends) {
			sc[col(ends[k])] += float32(rw.Value)
		} else {
			sc[L-2] += float32(rw.Value)
		}
	}
	return resp, loss, sc
}

// skipHeader returns the index of the first content token of the assistant
// turn starting at p by decoding tokens until the header text is covered.
func (c *ContextManager) skipHeader(r []int, p int, header string) int {
	acc := 0
	q := p
	for q < len(r) && acc < len(header) {
		acc += len(c.tok.Decode(r[q : q+1]))
		q++
	}
	return q
}

// legacyMasks reproduces upstream's get_masks_and_scores and the
// turn-level masks exactly (UpstreamCompat.MaskAlignment).
func (c *ContextManager) legacyMasks(mt modelTokens, r []int, pad int, s sample, score float32, ti, starts []int, resp, loss []int, sc []float32, useTurn bool) {
	n := len(r)
	L := n + pad
	full := make([]float32, L) // scores on input positions before the shift
	if s.lastOnly {
		idx := -1
		if c.cfg.AgentProxy.ContextWindowMode == ModeSingleTurn {
			if len(starts) >= 3 {
				idx = starts[2]
			}
		} else if len(starts) > 0 {
			idx = starts[len(starts)-1]
		}
		if idx >= 0 {
			from := pad + idx - 1
			if from < 0 {
				from = L - 2 // Python slice [-1:]
			}
			for j := from; j < L-1; j++ {
				resp[j], loss[j] = 1, 1
			}
		}
		for j := 0; j < pad && j < L-1; j++ {
			resp[j], loss[j] = 0, 0
		}
		sc[L-2] = score
		return
	}
	for j := 0; j < n-1; j++ {
		col := pad + j
		if ti[j]%2 == 1 && ti[j] > 1 {
			resp[col] = 1
		}
		if c.cfg.EnableResponseMask {
			loss[col] = resp[col]
		} else if ti[j] > 1 {
			loss[col] = 1
		}
	}
	if !useTurn {
		full[L-1] = score
	} else {
		// zip_longest over the batch: rows with fewer turns get 0, which
		// lands on (and overwrites) the last column.
		for idx := 0; idx < max(s.maxTurns, len(s.turns)); idx++ {
			var v float32
			if idx < len(s.turns) {
				v = float32(s.turns[idx].Value)
			}
			want := 2*idx + 3
			found := false
			for p := 0; p < n; p++ {
				if r[p] == mt.end && ti[p] == want {
					full[pad+p] = v
					found = true
				}
			}
			if !found {
				full[L-1] = v
			}
		}
		if mt.qwen {
			last := full[L-1]
			copy(full[1:], full[:L-1])
			full[0] = last
		}
	}
	copy(sc, full[1:])
}

// normalizeScores applies agent_proxy.reward_normalization (spec §3.8).
func normalizeScores(x []float32, outs []*EnvOutput, rn RewardNormalizationConfig) ([]float32, error) {
	keys := make([]string, len(outs))
	for i, o := range outs {
		switch rn.Grouping {
		case "state":
			keys[i] = fmt.Sprint(o.GroupID)
		case "inductive":
			keys[i] = o.Tag
		case "batch":
			keys[i] = "batch"
		default:
			return nil, fmt.Errorf("ragen: reward_normalization.grouping %q, want state, inductive or batch", rn.Grouping)
		}
	}
	// Upstream works on float32 tensors: the group mean and std are rounded
	// to float32 and the elementwise steps are float32 operations.
	stats := func(v []float32) (mu, sd float32) {
		w := make([]float64, len(v))
		for i, x := range v {
			w[i] = float64(x)
		}
		m, d := meanSampleStd(w)
		return float32(m), float32(d)
	}
	meanStd := func(v []float32) []float32 {
		mu, sd := stats(v)
		out := make([]float32, len(v))
		if !(float64(sd) > 1e-6) { // NaN (one member) or ~0 → zeros
			return out
		}
		den := sd + float32(1e-6)
		for i := range v {
			out[i] = (v[i] - mu) / den
		}
		return out
	}
	var norm func([]float32) []float32
	switch rn.Method {
	case "identity":
		norm = func(v []float32) []float32 { return v }
	case "mean":
		norm = func(v []float32) []float32 {
			mu, _ := stats(v)
			out := make([]float32, len(v))
			for i := range v {
				out[i] = v[i] - mu
			}
			return out
		}
	case "mean_std":
		norm = meanStd
	case "asym_clip":
		norm = func(v []float32) []float32 {
			out := meanStd(v)
			for i := range out {
				out[i] = min(3, max(-1, out[i]))
			}
			return out
		}
	default:
		return nil, fmt.Errorf("ragen: reward_normalization.method %q, want identity, mean, mean_std or asym_clip", rn.Method)
	}
	groups := map[string][]int{}
	var order []string
	for i, k := range keys {
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], i)
	}
	out := append([]float32(nil), x...)
	if len(groups) >= len(x) {
		return out, nil
	}
	for _, k := range order {
		idx := groups[k]
		v := make([]float32, len(idx))
		for j, i := range idx {
			v[j] = x[i]
		}
		for j, y := range norm(v) {
			out[idx[j]] = y
		}
	}
	return out, nil
}

// meanSampleStd returns the mean and the n−1 standard deviation (NaN for
// n < 2, as torch.std).
func meanSampleStd(v []float64) (float64, float64) {
	if len(v) == 0 {
		return math.NaN(), math.NaN()
	}
	s := 0.0
	for _, x := range v {
		s += x
	}
	mu := s / float64(len(v))
	if len(v) < 2 {
		return mu, math.NaN()
	}
	ss := 0.0
	for _, x := range v {
		ss += (x - mu) * (x - mu)
	}
	return mu, math.Sqrt(ss / float64(len(v)-1))
}

// batchMetrics aggregates per-env metrics (spec §3.9).
func batchMetrics(outs []*EnvOutput, set EnvSetConfig, respMask [][]int) map[string]float64 {
	envNums := map[string]int{}
	for k, tag := range set.EnvConfigs.Tags {
		envNums[tag] = set.EnvConfigs.NGroups[k] * set.GroupSize
	}
	vals := map[string][]float64{}
	for _, o := range outs {
		for k, v := range o.Metrics {
			vals[k] = append(vals[k], v)
		}
	}
	m := map[string]float64{}
	keys := make([]string, 0, len(vals))
	for k := range vals {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var returns []float64
	maxTile, haveTile := math.Inf(-1), false
	for _, k := range keys {
		v := vals[k]
		tag, name, _ := strings.Cut(k, "/")
		n := envNums[tag]
		if n == 0 {
			n = len(v)
		}
		sum := 0.0
		var nz []float64
		for _, x := range v {
			sum += x
			if x != 0 {
				nz = append(nz, x)
			}
		}
		m[k] = sum / float64(n)
		if len(nz) > 0 {
			s := 0.0
			for _, x := range nz {
				s += x
			}
			m[tag+"/non-zero/"+name] = s / float64(len(nz))
		}
		if name == "episodic_return" {
			returns = append(returns, m[k])
		}
		if name == "max_tile" {
			for _, x := range v {
				maxTile = math.Max(maxTile, x)
			}
			haveTile = true
		}
	}
	if len(returns) > 0 {
		s := 0.0
		for _, r := range returns {
			s += r
		}
		m["charts/avg_episode_return"] = s / float64(len(returns))
	}
	if haveTile {
		m["rollout/max_tile"] = maxTile
	}
	if len(respMask) > 0 {
		s := 0
		for _, row := range respMask {
			for _, x := range row {
				s += x
			}
		}
		m["response_length"] = float64(s) / float64(len(respMask))
	}
	return m
}
