package tokenizer

import (
	"strings"
	"sync"
)

// byteToRune is GPT-2's bytes_to_unicode: printable bytes map to themselves,
// the others to U+0100 upwards, so every byte is a visible vocab character.
var byteToRune, runeToByte = func() ([256]rune, map[rune]byte) {
	var b2r [256]rune
	r2b := make(map[rune]byte, 256)
	n := 0
	for b := 0; b < 256; b++ {
		if (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF) {
			b2r[b] = rune(b)
		} else {
			b2r[b] = rune(256 + n)
			n++
		}
		r2b[b2r[b]] = byte(b)
	}
	return b2r, r2b
}()

// tokenBytes maps a vocab token (byte-level characters) to raw bytes; ok is
// false if a character is not a byte-level character, in which case the
// ByteLevel decoder uses the token's own UTF-8 bytes.
func tokenBytes(tok string) ([]byte, bool) {
	out := make([]byte, 0, len(tok))
	for _, r := range tok {
		b, ok := runeToByte[r]
		if !ok {
			return []byte(tok), false
		}
		out = append(out, b)
	}
	return out, true
}

type pairKey struct{ a, b int32 }

type mergeVal struct {
	rank  int32
	newID int32
}

// bpeModel is a byte-level BPE: merges are ranked by their position in
// tokenizer.json, as Hugging Face does.
type bpeModel struct {
	byteIDs     [256]int32 // id of each single byte
	merges      map[pairKey]mergeVal
	vocab       map[string]int32 // raw bytes -> id
	ignoreMerge bool             // ignore_merges: a word in the vocab is one token

	mu    sync.RWMutex
	cache map[string][]int32
}

const bpeCacheMax = 1 << 16 // words kept in the cache before it is cleared

// encodeWord appends the ids of one pre-token (raw bytes) to dst.
func (m *bpeModel) encodeWord(dst []int, word string) []int {
	if m.ignoreMerge {
		if id, ok := m.vocab[word]; ok {
			return append(dst, int(id))
		}
	}
	if len(word) == 1 {
		return append(dst, int(m.byteIDs[word[0]]))
	}
	m.mu.RLock()
	ids, ok := m.cache[word]
	m.mu.RUnlock()
	if !ok {
		ids = m.merge(word)
		if len(word) <= 256 {
			m.mu.Lock()
			if len(m.cache) >= bpeCacheMax {
				m.cache = make(map[string][]int32, 1024)
			}
			m.cache[strings.Clone(word)] = ids // word points into the caller's text
			m.mu.Unlock()
		}
	}
	for _, id := range ids {
		dst = append(dst, int(id))
	}
	return dst
}

type symbol struct {
	id         int32
	prev, next int32 // -1: none
	removed    bool
}

type mergeItem struct {
	pos   int32
	rank  int32
	newID int32
}

// mergeQueue is a binary min-heap of merges ordered by (rank, pos).
type mergeQueue []mergeItem

func (a mergeItem) less(b mergeItem) bool {
	if a.rank != b.rank {
		return a.rank < b.rank
	}
	return a.pos < b.pos
}

func (q *mergeQueue) push(it mergeItem) {
	h := append(*q, it)
	i := len(h) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !h[i].less(h[p]) {
			break
		}
		h[i], h[p] = h[p], h[i]
		i = p
	}
	*q = h
}

func (q *mergeQueue) pop() mergeItem {
	h := *q
	top := h[0]
	n := len(h) - 1
	h[0] = h[n]
	h = h[:n]
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < n && h[l].less(h[m]) {
			m = l
		}
		if r < n && h[r].less(h[m]) {
			m = r
		}
		if m == i {
			break
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
	*q = h
	return top
}

// merge runs BPE on word exactly as Hugging Face's Word::merge_all: a
// priority queue of (rank, position) pairs, lowest rank and then leftmost
// first, with stale entries skipped.
func (m *bpeModel) merge(word string) []int32 {
	syms := make([]symbol, len(word))
	for i := 0; i < len(word); i++ {
		syms[i] = symbol{id: m.byteIDs[word[i]], prev: int32(i - 1), next: int32(i + 1)}
	}
	syms[len(syms)-1].next = -1
	q := make(mergeQueue, 0, len(word))
	for i := 0; i+1 < len(syms); i++ {
		if mv, ok := m.merges[pairKey{syms[i].id, syms[i+1].id}]; ok {
			q.push(mergeItem{int32(i), mv.rank, mv.newID})
		}
	}
	for len(q) > 0 {
		top := q.pop()
		cur := &syms[top.pos]
		if cur.removed || cur.next < 0 {
			continue
		}
		nextPos := cur.next
		right := syms[nextPos]
		if mv, ok := m.merges[pairKey{cur.id, right.id}]; !ok || mv.newID != top.newID {
			continue // stale entry
		}
		cur.id = top.newID
		cur.next = right.next
		syms[nextPos].removed = true
		if right.next >= 0 {
			syms[right.next].prev = top.pos
		}
		if cur.prev >= 0 {
			if mv, ok := m.merges[pairKey{syms[cur.prev].id, cur.id}]; ok {
				q.push(mergeItem{cur.prev, mv.rank, mv.newID})
			}
		}
		if cur.next >= 0 {
			if mv, ok := m.merges[pairKey{cur.id, syms[cur.next].id}]; ok {
				q.push(mergeItem{top.pos, mv.rank, mv.newID})
			}
		}
	}
	out := make([]int32, 0, 4)
	for i := int32(0); i >= 0; i = syms[i].next {
		out = append(out, syms[i].id)
	}
	return out
}
