package search

import (
	"regexp"
	"strings"
	"unicode"
)

// Normalize is upstream's answer normalisation (SQuAD style): lowercase,
// drop ASCII punctuation, replace the whole words a, an and the by a space,
// collapse whitespace.
func Normalize(s string) string {
	s = strings.ToLower(s)
	s = strings.Map(func(r rune) rune {
		if r < 128 && unicode.IsPunct(r) || r < 128 && unicode.IsSymbol(r) {
			return -1
		}
		return r
	}, s)
	s = articles.ReplaceAllString(s, " ")
	return strings.Join(strings.Fields(s), " ")
}

var articles = regexp.MustCompile(`\b(a|an|the)\b`)

// F1 is the token F1 of a prediction against one ground truth (multiset
// overlap of normalised tokens); when either normalises to yes, no or
// noanswer and they differ it is 0.
func F1(pred, truth string) float64 {
	p, t := Normalize(pred), Normalize(truth)
	special := func(s string) bool { return s == "yes" || s == "no" || s == "noanswer" }
	if (special(p) || special(t)) && p != t {
		return 0
	}
	pt, tt := strings.Fields(p), strings.Fields(t)
	count := map[string]int{}
	for _, w := range tt {
		count[w]++
	}
	common := 0
	for _, w := range pt {
		if count[w] > 0 {
			count[w]--
			common++
		}
	}
	if common == 0 {
		return 0
	}
	prec := float64(common) / float64(len(pt))
	rec := float64(common) / float64(len(tt))
	return 2 * prec * rec / (prec + rec)
}

// Score rates an answer against the ground truths: an exact match (after
// Normalize) earns correct; else the best token F1, if at least threshold,
// earns correct*F1; else incorrect.
func Score(answer string, truths []string, correct, incorrect, threshold float64) (reward float64, exact bool) {
	na := Normalize(answer)
	best := 0.0
	for _, t := range truths {
		if na == Normalize(t) {
			return correct, true
		}
		best = max(best, F1(answer, t))
	}
	if best >= threshold {
		return correct * best, false
	}
	return incorrect, false
}

var (
	thinkRe    = regexp.MustCompile(`(?s)<think>.*?</think>`)
	boxedRe    = regexp.MustCompile(`\\boxed\{([^}]*)\}`)
	bold2Re    = regexp.MustCompile(`\*\*([^*]+?)\*\*`)
	bold1Re    = regexp.MustCompile(`\*([^*]+?)\*`)
	answerIsRe = regexp.MustCompile(`(?i)(?:the\s+)?(?:correct\s+)?answer\s+is:?\s*([^.!?]+)`)
	thereRe    = regexp.MustCompile(`(?i)\b(?:therefore|thus|so|hence),?\s+([^.!?]+)`)
	sentenceRe = regexp.MustCompile(`[.!?]`)
	wordRe     = regexp.MustCompile(`\w`)
)

// trimNonWord trims characters that are not word characters from both
// ends.
func trimNonWord(s string) string {
	return strings.TrimFunc(s, func(r rune) bool { return !(unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_') })
}

// ExtractAnswer pulls an answer out of free text that is neither search[]
// nor finish[] (upstream's fallback), trying in order: \boxed{X}; the
// first **X** or *X* with more than 2 characters and a word character;
// "(the )(correct )answer is(:) X"; "therefore/thus/so/hence(,) X"; the
// first sentence longer than 5 characters; the first 100 characters.
func ExtractAnswer(text string) string {
	t := strings.Join(strings.Fields(thinkRe.ReplaceAllString(text, "")), " ")
	if m := boxedRe.FindStringSubmatch(t); m != nil {
		return strings.TrimSpace(m[1])
	}
	for _, re := range []*regexp.Regexp{bold2Re, bold1Re} {
		for _, m := range re.FindAllStringSubmatch(t, -1) {
			x := strings.TrimSpace(m[1])
			if len([]rune(x)) > 2 && wordRe.MatchString(x) {
				return x
			}
		}
	}
	for _, re := range []*regexp.Regexp{answerIsRe, thereRe} {
		if m := re.FindStringSubmatch(t); m != nil {
			if x := trimNonWord(m[1]); len([]rune(x)) > 3 {
				return x
			}
		}
	}
	for _, s := range sentenceRe.Split(t, -1) {
		if s = strings.TrimSpace(s); len([]rune(s)) > 5 {
			return s
		}
	}
	r := []rune(t)
	if len(r) > 100 {
		r = r[:100]
	}
	return strings.TrimSpace(string(r))
}
