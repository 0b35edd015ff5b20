package llm

import (
	"context"
	"fmt"
	"math"
	"strings"
	"time"

	"ragen/internal/torch/fused"
	"ragen/llm/tokenizer"
	"ragen/torch"
)

// GenOptions configure Generate.
type GenOptions struct {
	MaxNewTokens int
	// Temperature <= 0 decodes greedily; otherwise logits are divided by it
	// and sampled, restricted to the TopK best ids (0: off) and the TopP
	// nucleus (0 or >= 1: off).
	Temperature, TopP float64
	TopK              int
	// StopIDs end a sequence in addition to the tokenizer's and the model's
	// EOS ids (unless IgnoreEOS).
	StopIDs []int
	// StopStrings end a sequence when its text contains one; the text is cut
	// before it.
	StopStrings []string
	IgnoreEOS   bool
	Seed        uint64 // seeds the sampling generator
	// RowSeeds, if set (one per prompt), gives every sequence its own
	// sampling generator seeded RowSeeds[i] instead of one shared by the
	// batch, so a sequence's tokens do not depend on which other prompts
	// share the batch or their order (data-parallel rollout relies on it).
	RowSeeds []uint64
	// Stream, if set, receives each sequence's text as it grows (never text
	// past a stop string).
	Stream func(seq int, delta string)
	// Prefix, if set, keeps each sequence's KV cache after the call under
	// its key (PrefixKeys), and a later prompt with the same key prefills
	// only the tokens after its longest common prefix with that entry (see
	// PrefixCache).
	Prefix *PrefixCache
	// PrefixKeys names each prompt's trajectory in Prefix (one per prompt;
	// "": neither looked up nor stored).
	PrefixKeys []string
	// NoPrefixCaching turns prefix caching off: every prompt is prefilled
	// in full and Prefix is neither read nor written (its Stats still count
	// the work). By default identical prompts of one call (a GRPO group's
	// first turn) are prefilled once, their KV and logits copied to the
	// others, and Prefix, when set, is used. Either way the tokens agree up
	// to float rounding.
	NoPrefixCaching bool
	// AllowedIDs, if set, restricts every sampled id to this set (vLLM's
	// SamplingParams.allowed_token_ids): the other logits are -inf before
	// temperature, top-k and top-p, so greedy picks the best allowed id and
	// LogProbs are under the restricted distribution. EOS and stop ids end
	// a sequence only when they are allowed.
	AllowedIDs []int
}

// GenResult is one generated sequence.
type GenResult struct {
	IDs          []int     // generated ids, including the stop id that ended it
	LogProbs     []float64 // log-probability of each id under softmax(logits/T) (T = 1 when greedy)
	Text         string    // decoded text without special tokens, the stop id's text or the stop string
	FinishReason string    // "stop" or "length"
}

// seqState tracks one sequence during decoding.
type seqState struct {
	res     GenResult
	dec     *tokenizer.StreamDecoder
	text    strings.Builder
	emitted int
	done    bool
	plen    int
}

// Generate continues each prompt. Prompts of different lengths are
// left-padded into one batch with a preallocated KV cache; each step runs
// the whole model once for the active rows, and rows that finished are
// dropped from the batch once half of them are done. Sampling uses a
// generator seeded with opt.Seed, so a call is reproducible for the same
// prompts and options. tok may be nil when no text, EOS or stop strings are
// wanted. Under bf16 mixed precision (Options.ComputeDType) it computes in
// bf16, with bf16 copies of the weights made once per call and bf16 KV
// caches, as veRL's rollouts run in bf16; otherwise in the parameters' dtype.
// Unless opt.NoPrefixCaching, identical prompts are prefilled once and, with
// opt.Prefix, prompts continue the KV of earlier calls (PrefixCache).
func (m *Model) Generate(ctx context.Context, tok tokenizer.Tokenizer, prompts [][]int, opt GenOptions) ([]GenResult, error) {
	if len(prompts) == 0 {
		return nil, nil
	}
	if opt.MaxNewTokens < 1 {
		return nil, fmt.Errorf("llm: generate: max new tokens must be >= 1, got %d", opt.MaxNewTokens)
	}
	if len(opt.StopStrings) > 0 && tok == nil {
		return nil, fmt.Errorf("llm: generate: stop strings need a tokenizer")
	}
	if opt.RowSeeds != nil && len(opt.RowSeeds) != len(prompts) {
		return nil, fmt.Errorf("llm: generate: %d row seeds for %d prompts", len(opt.RowSeeds), len(prompts))
	}
	if opt.PrefixKeys != nil && len(opt.PrefixKeys) != len(prompts) {
		return nil, fmt.Errorf("llm: generate: %d prefix keys for %d prompts", len(opt.PrefixKeys), len(prompts))
	}
	if c := opt.Prefix; c != nil {
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.closed {
			return nil, fmt.Errorf("llm: generate: prefix cache used after Close")
		}
		if c.model == nil {
			c.model = m
		} else if c.model != m {
			return nil, fmt.Errorf("llm: generate: prefix cache holds another model's KV")
		}
	}
	V := m.cfg.VocabSize
	P := 0
	for i, p := range prompts {
		if len(p) == 0 {
			return nil, fmt.Errorf("llm: generate: prompt %d is empty", i)
		}
		for _, id := range p {
			if id < 0 || id >= V {
				return nil, fmt.Errorf("llm: generate: prompt %d: id %d outside the vocabulary (size %d)", i, id, V)
			}
		}
		P = max(P, len(p))
	}
	for _, id := range opt.AllowedIDs {
		if id < 0 || id >= V {
			return nil, fmt.Errorf("llm: generate: allowed id %d outside the vocabulary (size %d)", id, V)
		}
	}
	L := P + opt.MaxNewTokens
	if L > m.cfg.MaxPositionEmbeddings {
		return nil, fmt.Errorf("llm: generate: prompt %d + %d new tokens exceeds max_position_embeddings %d", P, opt.MaxNewTokens, m.cfg.MaxPositionEmbeddings)
	}
	if err := m.ensureRope(L); err != nil {
		return nil, fmt.Errorf("llm: generate: rotary table: %w", err)
	}
	stop := map[int]bool{}
	for _, id := range opt.StopIDs {
		stop[id] = true
	}
	pad := 0
	if tok != nil {
		pad = tok.PadID()
		if pad < 0 || pad >= V {
			pad = 0
		}
		if !opt.IgnoreEOS {
			for _, id := range tok.EOSIDs() {
				stop[id] = true
			}
		}
	}
	if !opt.IgnoreEOS {
		for _, id := range m.GenerationEOS() {
			stop[id] = true
		}
	}
	maxStop := 0
	for _, s := range opt.StopStrings {
		if s == "" {
			return nil, fmt.Errorf("llm: generate: empty stop string")
		}
		maxStop = max(maxStop, len(s))
	}
	byter, _ := tok.(tokenizer.TokenByter)
	B := len(prompts)
	seqs := make([]*seqState, B)
	for i, p := range prompts {
		seqs[i] = &seqState{plen: len(p)}
		if byter != nil {
			seqs[i].dec = tokenizer.NewStreamDecoder(byter, true)
		}
	}
	var out []GenResult
	err := torch.NoGrad(func() error {
		if err := m.decode(ctx, tok, prompts, seqs, stop, pad, P, L, maxStop, opt); err != nil {
			return err
		}
		out = make([]GenResult, B)
		for i, q := range seqs {
			out[i] = q.res
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// allowBias is the (1, V) logits bias of AllowedIDs (0 where allowed, -inf
// elsewhere) in dtype on dev, or nil when every id is allowed.
func allowBias(s *torch.Scope, ids []int, V int, dtype torch.DType, dev torch.Device) *torch.Tensor {
	if len(ids) == 0 {
		return nil
	}
	b := make([]float32, V)
	for i := range b {
		b[i] = float32(math.Inf(-1))
	}
	for _, id := range ids {
		b[id] = 0
	}
	return s.To(s.Own(torch.From(b, 1, int64(V))), dtype, dev)
}

func (m *Model) decode(ctx context.Context, tok tokenizer.Tokenizer, prompts [][]int, seqs []*seqState,
	stop map[int]bool, pad, P, L, maxStop int, opt GenOptions) error {
	B := len(prompts)
	dev := m.opt.Device
	s := torch.NewScope()
	defer s.Close()
	t0 := time.Now()
	cache, keys := opt.Prefix, opt.PrefixKeys
	// batch row -> sequence; with prefix caching the plan orders the rows
	// (rows that run, by new-token count, then copies of identical prompts)
	rows := inOrder(B)
	var plan *prefillPlan
	if !opt.NoPrefixCaching {
		plan = m.planPrefill(cache, prompts, keys, P)
		rows = plan.order
	}
	// the whole-length attention mask: real prompt tokens and every generated slot
	full := make([]int64, B*L)
	for b, q := range rows {
		for t := P - len(prompts[q]); t < L; t++ {
			full[b*L+t] = 1
		}
	}
	attn := s.Own(torch.From(full, int64(B), int64(L)))
	if dev != torch.CPU && attn != nil {
		attn = s.To(attn, torch.Int64, dev)
	}
	kbias := s.KeyBias(attn)
	D := int64(m.cfg.HeadDimension())
	KV := int64(m.cfg.NumKeyValueHeads)
	// generation computes in bf16 under bf16 mixed precision (weights cast
	// once per call, activations, KV caches), as veRL's rollouts; in the
	// parameters' dtype otherwise (genDType). Every step reads the caches
	// and the weights whole: both on huge pages (torch.OnHugePages).
	caches := make([]*torch.Tensor, 2*len(m.layers))
	_ = torch.OnHugePages(func() error {
		for i := range caches {
			caches[i] = s.Zeros([]int64{int64(B), KV, int64(L), D}, m.genDType(), dev)
		}
		return nil
	})
	if err := s.Err(); err != nil {
		return fmt.Errorf("llm: generate: %w", err)
	}
	g, err := torch.NewGenerator(opt.Seed, dev)
	if err != nil {
		return fmt.Errorf("llm: generate: %w", err)
	}
	defer g.Close()
	var rowGens []*torch.Generator // per sequence, with opt.RowSeeds
	if opt.RowSeeds != nil && opt.Temperature > 0 {
		rowGens = make([]*torch.Generator, B)
		defer func() {
			for _, rg := range rowGens {
				if rg != nil {
					rg.Close()
				}
			}
		}()
		for i, sd := range opt.RowSeeds {
			if rowGens[i], err = torch.NewGenerator(sd, dev); err != nil {
				return fmt.Errorf("llm: generate: %w", err)
			}
		}
	}
	var w *fused.Weights
	if err := torch.NoGrad(func() error {
		return torch.OnHugePages(func() error {
			var head *torch.Tensor
			w, head = m.weightsIn(s, m.genDType())
			w.Head = head
			return s.Err()
		})
	}); err != nil {
		return fmt.Errorf("llm: generate: %w", err)
	}
	allow := allowBias(s, opt.AllowedIDs, m.cfg.VocabSize, m.genDType(), dev)
	if err := s.Err(); err != nil {
		return fmt.Errorf("llm: generate: allowed ids: %w", err)
	}
	sh := m.shape()
	cur := torch.NewScope()
	defer func() { cur.Close() }()
	var logits *torch.Tensor
	if plan != nil {
		logits = m.prefillPlanned(cur, w, sh, plan, prompts, pad, P, kbias, caches)
		// one generator over the batch draws row by row: sequence order
		// keeps the draws those of a call without prefix caching
		if rowGens == nil && opt.Temperature > 0 && !identity(rows) {
			back := make([]int64, B)
			for r, q := range rows {
				back[q] = int64(r)
			}
			idx := cur.Own(torch.From(back))
			if dev != torch.CPU && idx != nil {
				idx = cur.To(idx, torch.Int64, dev)
			}
			if cur.Err() == nil {
				cur.Fail(torch.SelectRowsInPlace(append(caches, kbias), 0, idx))
			}
			logits = cur.IndexSelect(logits, 0, idx)
			rows = inOrder(B)
		}
	} else {
		ids, pos, _ := PadBatch(cur, prompts, pad, true, dev)
		logits = m.prefill(cur, w, sh, ids, pos, kbias, caches, 0, 0)
	}
	if err := cur.Err(); err != nil {
		return fmt.Errorf("llm: generate: prefill: %w", err)
	}
	store := plan != nil && cache != nil && keys != nil
	if cache != nil {
		st := &cache.stats
		st.Prompts += int64(B)
		for _, p := range prompts {
			st.PromptTokens += int64(len(p))
		}
		if plan != nil {
			for _, q := range plan.order[:plan.nReps] {
				st.ReusedTokens += int64(plan.reuse[q])
			}
			st.SharedTokens += plan.shared
			st.PrefilledTokens += plan.prefill
		} else {
			st.PrefilledTokens += int64(B * P)
		}
		t1 := time.Now()
		st.Prefill += t1.Sub(t0)
		defer func() { st.Decode += time.Since(t1) }()
	}
	for step := 0; step < opt.MaxNewTokens; step++ {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("llm: generate: %w", err)
		}
		next := torch.NewScope()
		if allow != nil {
			logits = next.Add(logits, allow)
		}
		var toks []int64
		var lps []float32
		if rowGens == nil {
			idT, lpT := next.Sample(logits, opt.Temperature, opt.TopK, opt.TopP, g)
			toks = next.Int64s(idT)
			lps = next.Float32s(lpT)
		} else {
			// one draw per sequence from its own generator (finished rows
			// still in the batch draw nothing)
			gens := make([]*torch.Generator, len(rows))
			for r, sq := range rows {
				if !seqs[sq].done {
					gens[r] = rowGens[sq]
				}
			}
			idT, lpT := next.SampleRows(logits, opt.Temperature, opt.TopK, opt.TopP, gens)
			toks = next.Int64s(idT)
			lps = next.Float32s(lpT)
		}
		if err := next.Err(); err != nil {
			next.Close()
			return fmt.Errorf("llm: generate: step %d: %w", step, err)
		}
		active := 0
		for r, sq := range rows {
			q := seqs[sq]
			if q.done {
				continue
			}
			m.accept(q, sq, int(toks[r]), float64(lps[r]), tok, stop, opt, maxStop)
			if !q.done {
				active++
			}
		}
		if active == 0 || step == opt.MaxNewTokens-1 {
			next.Close()
			break
		}
		// drop finished rows once at least half of the batch is done
		if active <= len(rows)/2 {
			if store {
				done := map[int]int{}
				for r, sq := range rows {
					if seqs[sq].done {
						done[sq] = r
					}
				}
				if err := m.storeRows(cache, keys, prompts, seqs, done, P, caches); err != nil {
					next.Close()
					return err
				}
			}
			keep := make([]int64, 0, active)
			var nrows []int
			var ntoks []int64
			for r, sq := range rows {
				if !seqs[sq].done {
					keep = append(keep, int64(r))
					nrows = append(nrows, sq)
					ntoks = append(ntoks, toks[r])
				}
			}
			idx := next.Own(torch.From(keep))
			if dev != torch.CPU && idx != nil {
				idx = next.To(idx, torch.Int64, dev)
			}
			if err := next.Err(); err != nil {
				next.Close()
				return fmt.Errorf("llm: generate: %w", err)
			}
			if err := torch.SelectRowsInPlace(append(caches, kbias), 0, idx); err != nil {
				next.Close()
				return fmt.Errorf("llm: generate: %w", err)
			}
			rows, toks = nrows, ntoks
		}
		n := len(rows)
		in := make([]int64, n)
		ps := make([]int64, n)
		for r, sq := range rows {
			in[r] = toks[r]
			if seqs[sq].done {
				in[r] = int64(pad)
			}
			ps[r] = int64(seqs[sq].plen + step)
		}
		idsT := next.Own(torch.From(in, int64(n), 1))
		posT := next.Own(torch.From(ps, int64(n), 1))
		if dev != torch.CPU && idsT != nil && posT != nil {
			idsT = next.To(idsT, torch.Int64, dev)
			posT = next.To(posT, torch.Int64, dev)
		}
		logits = fused.Forward(next, w, sh, fused.ForwardArgs{IDs: idsT, Pos: posT, Cos: m.cos, Sin: m.sin,
			KeyBias: kbias, KV: caches, CachePos: int64(P + step), LastOnly: true, NoGrad: true})
		if err := next.Err(); err != nil {
			next.Close()
			return fmt.Errorf("llm: generate: step %d: %w", step, err)
		}
		cur.Close()
		cur = next
	}
	for i, q := range seqs {
		if !q.done {
			q.done = true
			q.res.FinishReason = "length"
			m.finishText(q, i, tok, opt)
		}
	}
	if store {
		left := map[int]int{}
		for r, sq := range rows {
			left[sq] = r
		}
		if err := m.storeRows(cache, keys, prompts, seqs, left, P, caches); err != nil {
			return err
		}
	}
	return nil
}

// inOrder is the rows of n sequences in sequence order.
func inOrder(n int) []int {
	rows := make([]int, n)
	for i := range rows {
		rows[i] = i
	}
	return rows
}

// identity says whether rows are in sequence order.
func identity(rows []int) bool {
	for i, r := range rows {
		if i != r {
			return false
		}
	}
	return true
}

// prefillScoreElems bounds the attention scores one prefill call
// materialises (rows x heads x P x P floats, 64M = 256 MiB in float32).
var prefillScoreElems int64 = 1 << 26 // a variable for the tests

// prefill runs ids (n,T) through the model as batch rows [row0, row0+n)
// of the KV caches, the T tokens at cache slots [cachePos, cachePos+T),
// and returns the last position's logits (n,1,V). The attention of a prompt
// batch holds n x heads x T x (cachePos+T) scores at once (3 GB for 128 rows
// of 850 tokens at 4 heads), so the rows go through in groups that keep it
// under prefillScoreElems; each group writes its rows of the caches through
// views.
func (m *Model) prefill(s *torch.Scope, w *fused.Weights, sh fused.Shape, ids, pos, kbias *torch.Tensor, caches []*torch.Tensor, row0, cachePos int64) *torch.Tensor {
	if s.Err() != nil {
		return nil
	}
	B, T := ids.Size(0), ids.Size(1)
	per := int64(m.cfg.NumAttentionHeads) * T * (cachePos + T)
	rows := max(1, prefillScoreElems/max(per, 1))
	if rows >= B && row0 == 0 && B == kbias.Size(0) {
		return fused.Forward(s, w, sh, fused.ForwardArgs{IDs: ids, Pos: pos, Cos: m.cos, Sin: m.sin,
			KeyBias: kbias, KV: caches, CachePos: cachePos, LastOnly: true, NoGrad: true})
	}
	var parts []*torch.Tensor
	for b0 := int64(0); b0 < B; b0 += rows {
		n := min(rows, B-b0)
		kv := make([]*torch.Tensor, len(caches))
		for i, c := range caches {
			kv[i] = s.Narrow(c, 0, row0+b0, n)
		}
		parts = append(parts, fused.Forward(s, w, sh, fused.ForwardArgs{IDs: s.Narrow(ids, 0, b0, n), Pos: s.Narrow(pos, 0, b0, n),
			Cos: m.cos, Sin: m.sin, KeyBias: s.Narrow(kbias, 0, row0+b0, n), KV: kv, CachePos: cachePos, LastOnly: true, NoGrad: true}))
	}
	if len(parts) == 1 {
		return parts[0]
	}
	return s.Cat(parts, 0)
}

// accept appends one sampled id to sequence q and applies the stop rules.
func (m *Model) accept(q *seqState, seq, id int, lp float64, tok tokenizer.Tokenizer, stop map[int]bool,
	opt GenOptions, maxStop int) {
	q.res.IDs = append(q.res.IDs, id)
	q.res.LogProbs = append(q.res.LogProbs, lp)
	if stop[id] {
		q.done = true
		q.res.FinishReason = "stop"
		m.finishText(q, seq, tok, opt)
		return
	}
	if tok == nil {
		return
	}
	prev := q.text.Len()
	if q.dec != nil {
		q.text.WriteString(q.dec.Add(id))
	} else {
		q.text.Reset()
		q.text.WriteString(tok.Decode(q.res.IDs))
	}
	text := q.text.String()
	if maxStop > 0 {
		from := max(0, prev-maxStop+1)
		cut := -1
		for _, st := range opt.StopStrings {
			if i := strings.Index(text[from:], st); i >= 0 && (cut < 0 || from+i < cut) {
				cut = from + i
			}
		}
		if cut >= 0 {
			q.text.Reset()
			q.text.WriteString(text[:cut])
			q.done = true
			q.res.FinishReason = "stop"
			m.finishText(q, seq, tok, opt)
			return
		}
	}
	safe := len(text) - max(maxStop-1, 0)
	if opt.Stream != nil && safe > q.emitted {
		opt.Stream(seq, text[q.emitted:safe])
		q.emitted = safe
	}
}

// finishText flushes the decoder and streams what is left.
func (m *Model) finishText(q *seqState, seq int, tok tokenizer.Tokenizer, opt GenOptions) {
	if tok == nil {
		return
	}
	if q.dec != nil && q.res.FinishReason == "length" {
		q.text.WriteString(q.dec.Flush())
	}
	q.res.Text = q.text.String()
	if opt.Stream != nil && len(q.res.Text) > q.emitted {
		opt.Stream(seq, q.res.Text[q.emitted:])
		q.emitted = len(q.res.Text)
	}
}
