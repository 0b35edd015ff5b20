package llm

import (
	"fmt"
	"sort"
	"sync"
	"time"

	"ragen/internal/torch/fused"
	"ragen/torch"
)

// DefaultPrefixCacheTokens is the cap NewPrefixCache uses when given 0: the
// KV of 512k tokens, enough for upstream's default rollout (128
// trajectories of up to 3,600 prompt and 400 response tokens); 6 GiB at
// Qwen2.5-0.5B's shape in bf16 (24 layers, 2 KV heads of 64 dimensions:
// 12 KiB a token), 18 GiB at Qwen2.5-3B's.
const DefaultPrefixCacheTokens = 1 << 19

// PrefixCache keeps the KV cache of earlier Generate calls per key (a
// trajectory of a multi-turn rollout), so that a prompt extending what its
// key's entry covers prefills only its new tokens: the automatic prefix
// caching of vLLM, for one model.
//
// Entries are matched on token ids, never on text. An entry covers a
// prompt and the ids generated after it (all but the last, whose KV was
// never computed); when the next prompt re-renders that history and it
// tokenizes differently, or when a context window drops old turns, the
// longest common prefix of the entry and the prompt is reused and the rest
// is prefilled.
//
// Memory is bounded: the entries hold at most the cap's number of tokens,
// the least recently used going first, and Close frees them all. Entries
// hold KV computed with the weights of the time; a cache must not outlive a
// weight update (a rollout creates one and closes it at its end).
//
// A PrefixCache serves one Generate call at a time (a call holds it).
type PrefixCache struct {
	mu      sync.Mutex
	cap     int64
	tokens  int64
	clock   uint64
	entries map[string]*prefixEntry
	model   *Model
	closed  bool
	stats   PrefixStats
}

type prefixEntry struct {
	ids  []int
	kv   *torch.Tensor // (2·layers, KV heads, len(ids), head dim): keys and values per layer, in generation dtype
	used uint64
}

// PrefixStats count a PrefixCache's work since it was created.
type PrefixStats struct {
	Prompts      int64 // prompts generated with the cache
	PromptTokens int64 // their tokens
	// ReusedTokens are prompt tokens whose KV came from an earlier call's
	// entry (the longest common prefix with it).
	ReusedTokens int64
	// SharedTokens are tokens of prompts identical to another prompt of
	// the same call (the members of a GRPO group on their first turn),
	// whose KV was copied from that one.
	SharedTokens int64
	// PrefilledTokens are the token slots the prefill forward passes ran
	// (rows × chunk length, left padding and re-computed tokens included):
	// the prefill work done. Without reuse it is rows × longest prompt.
	PrefilledTokens int64
	Evictions       int64 // entries dropped to stay under the cap
	// Prefill and Decode are the wall time of Generate's two phases
	// (prefill includes the lookups and KV copies). On a GPU the prefill
	// time includes only what finished before the first sampled ids were
	// read.
	Prefill, Decode time.Duration
}

// NewPrefixCache returns an empty cache holding at most maxTokens tokens
// of KV (0: DefaultPrefixCacheTokens).
func NewPrefixCache(maxTokens int) *PrefixCache {
	if maxTokens <= 0 {
		maxTokens = DefaultPrefixCacheTokens
	}
	return &PrefixCache{cap: int64(maxTokens), entries: map[string]*prefixEntry{}}
}

// Stats returns the counters.
func (c *PrefixCache) Stats() PrefixStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stats
}

// Len returns the number of entries and the tokens they cover.
func (c *PrefixCache) Len() (entries int, tokens int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries), c.tokens
}

// Cached returns the token ids key's entry covers (nil if none).
func (c *PrefixCache) Cached(key string) []int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.entries[key]; e != nil {
		return append([]int(nil), e.ids...)
	}
	return nil
}

// Close frees every entry. A closed cache cannot be used again.
func (c *PrefixCache) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.clear()
	c.closed = true
	return nil
}

func (c *PrefixCache) clear() {
	for k, e := range c.entries {
		e.kv.Free()
		delete(c.entries, k)
	}
	c.tokens = 0
}

// lookup returns key's entry and the length of its longest common prefix
// with ids, or nil. An entry of another dtype or device is a miss.
func (c *PrefixCache) lookup(key string, ids []int, dt torch.DType, dev torch.Device) (*prefixEntry, int) {
	e := c.entries[key]
	if key == "" || e == nil || !e.kv.Valid() || e.kv.DType() != dt || e.kv.Device() != dev {
		return nil, 0
	}
	n := 0
	for n < len(ids) && n < len(e.ids) && ids[n] == e.ids[n] {
		n++
	}
	c.clock++
	e.used = c.clock
	return e, n
}

// put stores kv (owned by the cache from now on) as key's entry, replacing
// the old one, and evicts the least recently used entries beyond the cap.
// An entry longer than the cap is not kept.
func (c *PrefixCache) put(key string, ids []int, kv *torch.Tensor) {
	if old := c.entries[key]; old != nil {
		old.kv.Free()
		c.tokens -= int64(len(old.ids))
		delete(c.entries, key)
	}
	if int64(len(ids)) > c.cap {
		kv.Free()
		return
	}
	c.evict(c.cap - int64(len(ids)))
	c.clock++
	c.entries[key] = &prefixEntry{ids: ids, kv: kv, used: c.clock}
	c.tokens += int64(len(ids))
}

// evict drops least recently used entries until at most limit tokens remain.
func (c *PrefixCache) evict(limit int64) {
	if c.tokens <= limit {
		return
	}
	keys := make([]string, 0, len(c.entries))
	for k := range c.entries {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return c.entries[keys[i]].used < c.entries[keys[j]].used })
	for _, k := range keys {
		if c.tokens <= limit {
			return
		}
		e := c.entries[k]
		e.kv.Free()
		c.tokens -= int64(len(e.ids))
		delete(c.entries, k)
		c.stats.Evictions++
	}
}

// prefillPlan is how one Generate call prefills with reuse: the batch row
// order, the rows that run (reps, grouped into chunks of similar new-token
// counts), and the rows that copy another row's prompt (followers).
type prefillPlan struct {
	order   []int // batch row -> sequence: reps (chunk by chunk), then followers
	reuse   []int // per sequence: prompt tokens whose KV is loaded from its entry
	entry   []*prefixEntry
	chunks  []prefillChunk
	nReps   int
	leader  []int64 // per follower (batch rows nReps..): its leader's batch row
	shared  int64   // tokens of the followers' prompts
	prefill int64   // token slots the chunks run
}

// prefillChunk is a run of batch rows [Row0, Row0+Rows) prefilled together:
// each row's last N prompt tokens (left-padded) at cache slots [P-N, P).
type prefillChunk struct {
	Row0, Rows, N int
}

// planPrefill decides the reuse of each prompt and the order of the rows.
// A prompt reuses min(lcp, len-1) tokens of its key's entry (one token at
// least runs, for the logits). Identical prompts run once, on the one with
// the most reuse. Rows are sorted by new-token count and cut into chunks
// whose rows need at least half (or all but 32) of the chunk's longest
// count, so a chunk's padding stays bounded.
func (m *Model) planPrefill(c *PrefixCache, prompts [][]int, keys []string, P int) *prefillPlan {
	B := len(prompts)
	pl := &prefillPlan{reuse: make([]int, B), entry: make([]*prefixEntry, B)}
	if c != nil && keys != nil {
		dt, dev := m.genDType(), m.opt.Device
		for i, p := range prompts {
			e, n := c.lookup(keys[i], p, dt, dev)
			if e != nil && n > 0 {
				pl.entry[i] = e
				pl.reuse[i] = min(n, len(p)-1)
			}
		}
	}
	// identical prompts: the one with the most reuse leads
	lead := map[string]int{}
	leaderOf := make([]int, B)
	for i, p := range prompts {
		k := idsKey(p)
		j, ok := lead[k]
		if !ok || pl.reuse[i] > pl.reuse[j] {
			lead[k] = i
		}
	}
	var reps, fols []int
	for i, p := range prompts {
		leaderOf[i] = lead[idsKey(p)]
		if leaderOf[i] == i {
			reps = append(reps, i)
		} else {
			fols = append(fols, i)
		}
	}
	need := func(i int) int { return len(prompts[i]) - pl.reuse[i] }
	sort.SliceStable(reps, func(a, b int) bool { return need(reps[a]) > need(reps[b]) })
	heads := int64(m.cfg.NumAttentionHeads)
	for r := 0; r < len(reps); {
		N := need(reps[r])
		maxRows := max(1, int(prefillScoreElems/max(heads*int64(N)*int64(P), 1)))
		n := 1
		for r+n < len(reps) && n < maxRows {
			k := need(reps[r+n])
			if 2*k < N && N-k > 32 {
				break
			}
			n++
		}
		pl.chunks = append(pl.chunks, prefillChunk{Row0: r, Rows: n, N: N})
		pl.prefill += int64(n * N)
		r += n
	}
	pl.nReps = len(reps)
	row := make([]int, B) // sequence -> batch row
	pl.order = append(reps, fols...)
	for r, q := range pl.order {
		row[q] = r
	}
	for _, q := range fols {
		pl.leader = append(pl.leader, int64(row[leaderOf[q]]))
		pl.shared += int64(len(prompts[q]))
	}
	return pl
}

func idsKey(p []int) string {
	b := make([]byte, 0, 4*len(p))
	for _, id := range p {
		b = append(b, byte(id), byte(id>>8), byte(id>>16), byte(id>>24))
	}
	return string(b)
}

// prefillPlanned runs pl: it loads each rep's reused KV from its entry into
// its cache row (slots P-len .. P-len+reuse), runs the chunks, then copies
// each follower's leader row (KV and logits). It returns the last prompt
// position's logits (B,1,V) in batch-row order.
func (m *Model) prefillPlanned(s *torch.Scope, w *fused.Weights, sh fused.Shape, pl *prefillPlan, prompts [][]int,
	pad, P int, kbias *torch.Tensor, caches []*torch.Tensor) *torch.Tensor {
	dev := m.opt.Device
	for r := 0; r < pl.nReps; r++ {
		q := pl.order[r]
		n := int64(pl.reuse[q])
		if n == 0 {
			continue
		}
		off := int64(P - len(prompts[q]))
		e := pl.entry[q]
		for i, c := range caches {
			dst := s.Narrow(s.Narrow(c, 0, int64(r), 1), 2, off, n)
			s.CopyInto(dst, s.Narrow(s.Narrow(e.kv, 0, int64(i), 1), 2, 0, n))
		}
	}
	var parts []*torch.Tensor
	for _, ch := range pl.chunks {
		ids := make([]int64, ch.Rows*ch.N)
		ps := make([]int64, ch.Rows*ch.N)
		for j := 0; j < ch.Rows; j++ {
			p := prompts[pl.order[ch.Row0+j]]
			for t := 0; t < ch.N; t++ {
				k := len(p) - ch.N + t
				ids[j*ch.N+t] = int64(pad)
				if k >= 0 {
					ids[j*ch.N+t], ps[j*ch.N+t] = int64(p[k]), int64(k)
				}
			}
		}
		idT := s.Own(torch.From(ids, int64(ch.Rows), int64(ch.N)))
		posT := s.Own(torch.From(ps, int64(ch.Rows), int64(ch.N)))
		if dev != torch.CPU && idT != nil && posT != nil {
			idT, posT = s.To(idT, torch.Int64, dev), s.To(posT, torch.Int64, dev)
		}
		parts = append(parts, m.prefill(s, w, sh, idT, posT, kbias, caches, int64(ch.Row0), int64(P-ch.N)))
	}
	logits := parts[0]
	if len(parts) > 1 {
		logits = s.Cat(parts, 0)
	}
	if len(pl.leader) == 0 || s.Err() != nil {
		return logits
	}
	src := s.Own(torch.From(pl.leader))
	dst := make([]int64, len(pl.leader))
	for i := range dst {
		dst[i] = int64(pl.nReps + i)
	}
	dstT := s.Own(torch.From(dst))
	if dev != torch.CPU && src != nil && dstT != nil {
		src, dstT = s.To(src, torch.Int64, dev), s.To(dstT, torch.Int64, dev)
	}
	for _, c := range caches {
		// one layer's copy at a time: the leader rows are a temporary
		cs := torch.NewScope()
		if s.Err() == nil {
			cs.IndexCopyInto(c, 0, dstT, cs.IndexSelect(c, 0, src))
		}
		s.Fail(cs.Close())
	}
	return s.Cat([]*torch.Tensor{logits, s.IndexSelect(logits, 0, src)}, 0)
}

// storeRows copies the KV of the given batch rows into c under their
// sequences' keys: sequence q's entry covers its prompt and all generated
// ids but the last (slots P-len .. P+generated-1).
func (m *Model) storeRows(c *PrefixCache, keys []string, prompts [][]int, seqs []*seqState, batchRows map[int]int,
	P int, caches []*torch.Tensor) error {
	s := torch.NewScope()
	defer s.Close()
	for q, r := range batchRows {
		if keys[q] == "" {
			continue
		}
		g := len(seqs[q].res.IDs)
		ids := append(append(make([]int, 0, len(prompts[q])+g), prompts[q]...), seqs[q].res.IDs[:max(g-1, 0)]...)
		if int64(len(ids)) > c.cap {
			continue
		}
		off := int64(P - len(prompts[q]))
		parts := make([]*torch.Tensor, len(caches))
		for i, kc := range caches {
			parts[i] = s.Narrow(s.Narrow(kc, 0, int64(r), 1), 2, off, int64(len(ids)))
		}
		kv := s.Cat(parts, 0)
		if err := s.Err(); err != nil {
			return fmt.Errorf("llm: generate: prefix cache: %w", err)
		}
		c.put(keys[q], ids, s.Escape(kv))
	}
	return nil
}
