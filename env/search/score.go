package search

import (
	"regexp"
	"strings"

	"ragen/env/internal/pyjson"
	"ragen/internal/pystr"
)

// pyFields is Python's str.split() with no separator.
func pyFields(s string) []string { return strings.FieldsFunc(s, pystr.IsSpace) }

const asciiPunct = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~" // Python's string.punctuation

// Normalize is upstream's answer normalisation (SQuAD style,
// service-envs.md §1): lowercase (Python's str.lower: a final sigma, a
// dotted capital I as i and U+0307), delete the 32 ASCII punctuation
// characters, replace the whole words a, an and the (Unicode word
// boundaries, as Python's re) by a space, split on whitespace and join
// with one space.
func Normalize(s string) string {
	s = pystr.Lower(s)
	s = strings.Map(func(r rune) rune {
		if r < 128 && strings.ContainsRune(asciiPunct, r) {
			return -1
		}
		return r
	}, s)
	// \b(a|an|the)\b matches exactly the maximal runs of word characters
	// that are one of the three words.
	var b strings.Builder
	rs := []rune(s)
	for i := 0; i < len(rs); {
		j := i
		for j < len(rs) && pystr.IsWord(rs[j]) == pystr.IsWord(rs[i]) {
			j++
		}
		w := string(rs[i:j])
		if pystr.IsWord(rs[i]) && (w == "a" || w == "an" || w == "the") {
			b.WriteByte(' ')
		} else {
			b.WriteString(w)
		}
		i = j
	}
	return strings.Join(pyFields(b.String()), " ")
}

// F1 is the token F1 of a prediction against one ground truth (multiset
// overlap of normalised tokens); when either normalises to yes, no or
// noanswer and they differ it is 0.
func F1(pred, truth string) float64 {
	f, _, _ := f1(pred, truth)
	return f
}

func f1(pred, truth string) (f, precision, recall float64) {
	p, t := Normalize(pred), Normalize(truth)
	special := func(s string) bool { return s == "yes" || s == "no" || s == "noanswer" }
	if (special(p) || special(t)) && p != t {
		return 0, 0, 0
	}
	pt, tt := pyFields(p), pyFields(t)
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
		return 0, 0, 0
	}
	precision = float64(common) / float64(len(pt))
	recall = float64(common) / float64(len(tt))
	return 2 * precision * recall / (precision + recall), precision, recall
}

// Scoring is upstream's compute_reward result (service-envs.md §1): the
// reward and the reward_metadata it reports.
type Scoring struct {
	ExtractedAnswer string   // the scored string
	GroundTruths    []string // as given
	BestMatch       string   // stripped ground truth of the best score, "" if none
	F1Score         float64
	Precision       float64
	Recall          float64
	ExactMatch      bool
	// EvaluationMethod is "exact_match", "f1_score" or "" (Python None:
	// no ground truth scored above 0).
	EvaluationMethod string
	F1Threshold      float64
	Reward           float64
}

// Metadata is the reward_metadata info value: upstream's keys, with
// evaluation_method nil when no method applied.
func (s Scoring) Metadata() map[string]any {
	gts := make([]any, len(s.GroundTruths))
	for i, g := range s.GroundTruths {
		gts[i] = g
	}
	var method any
	if s.EvaluationMethod != "" {
		method = s.EvaluationMethod
	}
	return map[string]any{
		"extracted_answer": s.ExtractedAnswer, "ground_truths": gts, "best_match": s.BestMatch,
		"f1_score": s.F1Score, "precision": s.Precision, "recall": s.Recall,
		"exact_match": s.ExactMatch, "evaluation_method": method,
		"f1_threshold": s.F1Threshold, "reward": s.Reward,
	}
}

// ScoreAnswer is upstream's compute_reward: ground truths in order, each
// stripped; an exact match (after Normalize) stops with reward correct;
// otherwise the strictly best token F1 is kept, and when it reaches
// threshold the reward is correct*F1, else incorrect.
func ScoreAnswer(answer string, truths []string, correct, incorrect, threshold float64) Scoring {
	s := Scoring{ExtractedAnswer: answer, GroundTruths: truths, F1Threshold: threshold}
	na := Normalize(answer)
	for _, gt := range truths {
		g := pystr.Strip(gt)
		if na == Normalize(g) {
			s.F1Score, s.Precision, s.Recall, s.BestMatch, s.EvaluationMethod, s.ExactMatch = 1, 1, 1, g, "exact_match", true
			break
		}
		if f, p, r := f1(answer, g); f > s.F1Score {
			s.F1Score, s.Precision, s.Recall, s.BestMatch, s.EvaluationMethod = f, p, r, g, "f1_score"
		}
	}
	switch {
	case s.ExactMatch:
		s.Reward = correct
	case s.F1Score >= threshold:
		s.Reward = correct * s.F1Score
	default:
		s.Reward = incorrect
	}
	return s
}

// Score rates an answer against the ground truths (ScoreAnswer's reward
// and whether it was an exact match).
func Score(answer string, truths []string, correct, incorrect, threshold float64) (reward float64, exact bool) {
	s := ScoreAnswer(answer, truths, correct, incorrect, threshold)
	return s.Reward, s.ExactMatch
}

// pyS is Python's \s in a str pattern, as a Go character class.
const pyS = `[\t\n\v\f\r \x{1c}-\x{1f}\x{85}\x{a0}\x{1680}\x{2000}-\x{200a}\x{2028}\x{2029}\x{202f}\x{205f}\x{3000}]`

var (
	thinkRe    = regexp.MustCompile(`(?s)<think>.*?</think>`)
	boxedRe    = regexp.MustCompile(`\\boxed\{([^}]+)\}`)
	bold2Re    = regexp.MustCompile(`\*\*([^*]+)\*\*`)
	bold1Re    = regexp.MustCompile(`\*([^*]+)\*`)
	answerIsRe = regexp.MustCompile(`(?i)(?:the` + pyS + `+)?(?:correct` + pyS + `+)?answer` + pyS + `+is` + pyS + `*:?` + pyS + `*([^.!?]+)`)
	thereRe    = regexp.MustCompile(`(?i)(?:therefore|thus|so|hence)` + pyS + `*,?` + pyS + `*([^.!?]+)`)
	sentenceRe = regexp.MustCompile(`[.!?]+`)
)

// trimNonWord is re.sub(r'^\W+|\W+$', ”, s) (Unicode \W).
func trimNonWord(s string) string {
	return strings.TrimFunc(s, func(r rune) bool { return !pystr.IsWord(r) })
}

func hasWord(s string) bool { return strings.IndexFunc(s, pystr.IsWord) >= 0 }

// ExtractAnswer is upstream's fallback answer extraction for text that is
// neither search[] nor finish[] (service-envs.md §1, with Python's
// Unicode-aware \s and \w): drop <think> blocks and collapse whitespace;
// then, first that applies, \boxed{X}; the first **X** (else *X*) with
// more than 2 characters and a word character; the first match of
// "(the )(correct )answer is(:) X", then of "therefore|thus|so|hence(,) X"
// (no word boundaries: "so" matches inside "person"), when longer than 3
// characters; the first sentence longer than 5 characters; the first 100
// characters.
func ExtractAnswer(text string) string {
	t := thinkRe.ReplaceAllString(text, "")
	var b strings.Builder
	space := false
	for _, r := range t {
		if pystr.IsSpace(r) {
			if !space {
				b.WriteByte(' ')
			}
			space = true
			continue
		}
		space = false
		b.WriteRune(r)
	}
	t = pystr.Strip(b.String())
	if t == "" {
		return ""
	}
	if m := boxedRe.FindStringSubmatch(t); m != nil {
		return pystr.Strip(m[1])
	}
	for _, re := range []*regexp.Regexp{bold2Re, bold1Re} {
		for _, m := range re.FindAllStringSubmatch(t, -1) {
			if x := pystr.Strip(m[1]); len([]rune(x)) > 2 && hasWord(x) {
				return x
			}
		}
	}
	for _, re := range []*regexp.Regexp{answerIsRe, thereRe} {
		if m := re.FindStringSubmatch(t); m != nil {
			if x := trimNonWord(pystr.Strip(m[1])); len([]rune(x)) > 3 {
				return x
			}
		}
	}
	for _, s := range sentenceRe.Split(t, -1) {
		if s = pystr.Strip(s); len([]rune(s)) > 5 {
			return s
		}
	}
	r := []rune(t)
	if len(r) > 100 {
		r = r[:100]
	}
	return pystr.Strip(string(r))
}

// pyStr is Python's str() of a ground truth or server value.
func pyStr(v any) string { return pyjson.Str(v) }
