package tokenizer

import (
	"sort"
	"strings"
	"unicode/utf8"
)

// Hangul syllable composition constants (Unicode §3.12).
const (
	hSBase  = 0xAC00
	hLBase  = 0x1100
	hVBase  = 0x1161
	hTBase  = 0x11A7
	hLCount = 19
	hVCount = 21
	hTCount = 28
	hNCount = hVCount * hTCount
	hSCount = hLCount * hNCount
)

func inRanges2(r rune, tab [][2]int32) bool {
	i := sort.Search(len(tab), func(i int) bool { return tab[i][1] >= int32(r) })
	return i < len(tab) && tab[i][0] <= int32(r)
}

func combiningClass(r rune) int {
	if r < 0x300 {
		return 0
	}
	tab := nfcCCC[:]
	i := sort.Search(len(tab), func(i int) bool { return tab[i][1] >= int32(r) })
	if i < len(tab) && tab[i][0] <= int32(r) {
		return int(tab[i][2])
	}
	return 0
}

// isNFCSafe reports whether r is unchanged by NFC whatever surrounds it.
func isNFCSafe(r rune) bool {
	return r < 0x300 || !inRanges2(r, nfcUnsafe[:])
}

// NFC returns s in Unicode Normalization Form C (canonical decomposition
// followed by canonical composition), the normalizer of the Qwen2 tokenizers.
// Invalid UTF-8 bytes are kept as they are.
func NFC(s string) string {
	first := -1
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			i++
			continue
		}
		if !isNFCSafe(r) {
			first = i
			break
		}
		i += n
	}
	if first < 0 {
		return s
	}
	// Normalise from the last safe starter before the first unsafe rune;
	// everything before it is unaffected.
	start := first
	for start > 0 {
		r, n := utf8.DecodeLastRuneInString(s[:start])
		start -= n
		if isNFCSafe(r) {
			break
		}
	}
	var sb strings.Builder
	sb.Grow(len(s) + 8)
	sb.WriteString(s[:start])
	// Process the rest in runs of valid UTF-8, keeping invalid bytes.
	rest := s[start:]
	for len(rest) > 0 {
		j := 0
		for j < len(rest) {
			r, n := utf8.DecodeRuneInString(rest[j:])
			if r == utf8.RuneError && n == 1 {
				break
			}
			j += n
		}
		if j > 0 {
			sb.WriteString(nfcValid(rest[:j]))
			rest = rest[j:]
			continue
		}
		sb.WriteByte(rest[0])
		rest = rest[1:]
	}
	return sb.String()
}

// nfcValid normalises valid UTF-8.
func nfcValid(s string) string {
	// Decompose.
	d := make([]rune, 0, len(s))
	for _, r := range s {
		switch {
		case r >= hSBase && r < hSBase+hSCount:
			si := r - hSBase
			d = append(d, hLBase+si/hNCount, hVBase+(si%hNCount)/hTCount)
			if t := si % hTCount; t != 0 {
				d = append(d, hTBase+t)
			}
		case r >= 0xC0:
			if dec, ok := nfcDecomp[r]; ok {
				for _, x := range dec {
					d = append(d, x)
				}
				continue
			}
			d = append(d, r)
		default:
			d = append(d, r)
		}
	}
	// Canonical ordering: stable sort of each run of non-starters by class.
	cc := make([]int, len(d))
	for i, r := range d {
		cc[i] = combiningClass(r)
	}
	for i := 0; i < len(d); {
		if cc[i] == 0 {
			i++
			continue
		}
		j := i
		for j < len(d) && cc[j] != 0 {
			j++
		}
		for a := i + 1; a < j; a++ { // insertion sort: runs are short
			for b := a; b > i && cc[b-1] > cc[b]; b-- {
				d[b-1], d[b] = d[b], d[b-1]
				cc[b-1], cc[b] = cc[b], cc[b-1]
			}
		}
		i = j
	}
	// Canonical composition.
	out := d[:0]
	starter := -1 // index in out of the last starter
	lastCC := -1  // class of the last rune after that starter; -1: none
	for i, r := range d {
		c := cc[i]
		if starter >= 0 && (lastCC == -1 || (lastCC != 0 && lastCC < c)) {
			if comp, ok := composePair(out[starter], r); ok {
				out[starter] = comp
				continue
			}
		}
		if c == 0 {
			starter = len(out)
			lastCC = -1
		} else {
			lastCC = c
		}
		out = append(out, r)
	}
	return string(out)
}

func composePair(a, b rune) (rune, bool) {
	if a >= hLBase && a < hLBase+hLCount && b >= hVBase && b < hVBase+hVCount {
		return hSBase + ((a-hLBase)*hVCount+(b-hVBase))*hTCount, true
	}
	if a >= hSBase && a < hSBase+hSCount && (a-hSBase)%hTCount == 0 && b > hTBase && b < hTBase+hTCount {
		return a + (b - hTBase), true
	}
	r, ok := nfcCompose[[2]rune{a, b}]
	return r, ok
}
