package tokenizer

import (
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"
)

// literalMatcher finds added tokens literally in text, preferring the longest
// token when several start at the same position, as Hugging Face's
// AddedVocabulary (an Aho-Corasick automaton with leftmost-longest matching)
// does.
type literalMatcher struct {
	byFirst [256][]matchTok // tokens by first byte, longest first
	any     bool            // at least one token
}

type matchTok struct {
	content    string
	id         int
	lstrip     bool // absorb whitespace on the left
	rstrip     bool // absorb whitespace on the right
	singleWord bool // match only when not inside a word
}

func newLiteralMatcher(toks map[string]int) *literalMatcher {
	l := make([]matchTok, 0, len(toks))
	for c, id := range toks {
		l = append(l, matchTok{content: c, id: id})
	}
	return newLiteralMatcherTokens(l)
}

func newLiteralMatcherTokens(toks []matchTok) *literalMatcher {
	m := &literalMatcher{}
	for _, t := range toks {
		if t.content == "" {
			continue
		}
		m.byFirst[t.content[0]] = append(m.byFirst[t.content[0]], t)
		m.any = true
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
		if !strings.HasPrefix(text[i:], t.content) {
			continue
		}
		if t.singleWord {
			before, _ := utf8.DecodeLastRuneInString(text[:i])
			after, _ := utf8.DecodeRuneInString(text[i+len(t.content):])
			if (i > 0 && isWordChar(before)) || (i+len(t.content) < len(text) && isWordChar(after)) {
				continue
			}
		}
		return t, true
	}
	return matchTok{}, false
}

func isWordChar(r rune) bool { return r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) }

// segment is a piece of text: either a matched added token (id ≥ 0) or plain
// text to be tokenized by the model (id == -1).
type segment struct {
	text string
	id   int
}

// split cuts text into plain pieces and added tokens, leftmost first.
func (m *literalMatcher) split(text string) []segment {
	if !m.any {
		return []segment{{text, -1}}
	}
	var out []segment
	start := 0
	for i := 0; i < len(text); {
		if m.byFirst[text[i]] != nil {
			if t, ok := m.at(text, i); ok {
				lo, hi := i, i+len(t.content)
				if t.lstrip {
					for lo > start {
						r, n := utf8.DecodeLastRuneInString(text[start:lo])
						if !unicode.IsSpace(r) {
							break
						}
						lo -= n
					}
				}
				if t.rstrip {
					for hi < len(text) {
						r, n := utf8.DecodeRuneInString(text[hi:])
						if !unicode.IsSpace(r) {
							break
						}
						hi += n
					}
				}
				if start < lo {
					out = append(out, segment{text[start:lo], -1})
				}
				out = append(out, segment{t.content, t.id})
				i = hi
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
