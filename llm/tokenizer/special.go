package tokenizer

import (
	"sort"
	"strings"
)

// literalMatcher finds added tokens literally in text, preferring the longest
// token when several start at the same position, as Hugging Face's
// AddedVocabulary (an Aho-Corasick automaton with leftmost-longest matching)
// does.
type literalMatcher struct {
	byFirst map[byte][]matchTok // tokens by first byte, longest first
}

type matchTok struct {
	content string
	id      int
}

func newLiteralMatcher(toks map[string]int) *literalMatcher {
	m := &literalMatcher{byFirst: map[byte][]matchTok{}}
	for c, id := range toks {
		if c == "" {
			continue
		}
		m.byFirst[c[0]] = append(m.byFirst[c[0]], matchTok{c, id})
	}
	for _, l := range m.byFirst {
		sort.Slice(l, func(i, j int) bool {
			if len(l[i].content) != len(l[j].content) {
				return len(l[i].content) > len(l[j].content)
			}
			return l[i].content < l[j].content
		})
	}
	return m
}

// at reports the token that starts at text[i:], if any.
func (m *literalMatcher) at(text string, i int) (matchTok, bool) {
	for _, t := range m.byFirst[text[i]] {
		if strings.HasPrefix(text[i:], t.content) {
			return t, true
		}
	}
	return matchTok{}, false
}

// segment is a piece of text: either a matched added token (id ≥ 0) or plain
// text to be tokenized by the model (id == -1).
type segment struct {
	text string
	id   int
}

// split cuts text into plain pieces and added tokens, leftmost first.
func (m *literalMatcher) split(text string) []segment {
	if len(m.byFirst) == 0 {
		return []segment{{text, -1}}
	}
	var out []segment
	start := 0
	for i := 0; i < len(text); {
		if _, ok := m.byFirst[text[i]]; ok {
			if t, ok := m.at(text, i); ok {
				if start < i {
					out = append(out, segment{text[start:i], -1})
				}
				out = append(out, segment{t.content, t.id})
				i += len(t.content)
				start = i
				continue
			}
		}
		i++
	}
	if start < len(text) {
		out = append(out, segment{text[start:], -1})
	}
	return out
}
