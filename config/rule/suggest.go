package rule

import (
	"sort"
	"strings"
)

// levenshtein returns the edit distance between a and b (runes, unit costs; an adjacent
// transposition counts as one edit: optimal string alignment distance).
func levenshtein(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev2 := make([]int, len(rb)+1)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1) // transposition
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(rb)]
}

// NearestKey returns the candidate closest to key: first a candidate that ends with
// "."+key (the user gave a leaf name without its section; shortest such wins), otherwise
// the smallest edit distance over whole dotted paths (ties: lexically first). It returns ""
// when candidates is empty or the best match shares too little with key to help.
func NearestKey(key string, candidates []string) string {
	var suffix []string
	for _, c := range candidates {
		if strings.HasSuffix(c, "."+key) {
			suffix = append(suffix, c)
		}
	}
	if len(suffix) > 0 {
		sort.Slice(suffix, func(i, j int) bool {
			if len(suffix[i]) != len(suffix[j]) {
				return len(suffix[i]) < len(suffix[j])
			}
			return suffix[i] < suffix[j]
		})
		return suffix[0]
	}
	best, bestD := "", -1
	for _, c := range candidates {
		d := levenshtein(key, c)
		if bestD < 0 || d < bestD || (d == bestD && c < best) {
			best, bestD = c, d
		}
	}
	// A suggestion that rewrites most of the key is noise.
	if bestD < 0 || bestD > max(len([]rune(key)), len([]rune(best)))*2/3 {
		return ""
	}
	return best
}

// DidYouMean formats a suggestion suffix for error messages. When the key is a bare leaf
// name that occurs in several sections, up to three of them are listed.
func DidYouMean(key string, candidates []string) string {
	var suffix []string
	for _, c := range candidates {
		if strings.HasSuffix(c, "."+key) {
			suffix = append(suffix, c)
		}
	}
	if len(suffix) > 1 {
		sort.Slice(suffix, func(i, j int) bool { return suffix[i] < suffix[j] })
		if len(suffix) > 3 {
			suffix = suffix[:3]
		}
		return " (did you mean " + strings.Join(suffix, " or ") + "?)"
	}
	if s := NearestKey(key, candidates); s != "" {
		return " (did you mean " + s + "?)"
	}
	return ""
}
