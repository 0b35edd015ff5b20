package pystr

import "testing"

// TestIsSpace: every character below U+10000 against CPython 3.11's
// str.isspace (the list below is all of them).
func TestIsSpace(t *testing.T) {
	want := map[rune]bool{}
	for _, r := range []rune{0x9, 0xa, 0xb, 0xc, 0xd, 0x1c, 0x1d, 0x1e, 0x1f, 0x20, 0x85, 0xa0, 0x1680,
		0x2000, 0x2001, 0x2002, 0x2003, 0x2004, 0x2005, 0x2006, 0x2007, 0x2008, 0x2009, 0x200a,
		0x2028, 0x2029, 0x202f, 0x205f, 0x3000} {
		want[r] = true
	}
	for r := rune(0); r < 0x10000; r++ {
		if IsSpace(r) != want[r] {
			t.Errorf("IsSpace(%U) = %v", r, IsSpace(r))
		}
	}
	if got := Strip("\x1c\u3000 a b\u2029\u0085"); got != "a b" {
		t.Errorf("Strip: %q", got)
	}
}

// TestIsWord: re.match(r"\w", c) in CPython 3.11 for letters of several
// scripts, digits and other numbers, a combining mark and punctuation.
func TestIsWord(t *testing.T) {
	for r, want := range map[rune]bool{'a': true, 'Z': true, '_': true, '1': true, 'é': true, '²': true, 'Ⅻ': true,
		'一': true, '٣': true, 'ʰ': true, '\u0301': false, '-': false, ' ': false, '.': false, '\u00a0': false} {
		if IsWord(r) != want {
			t.Errorf("IsWord(%U) = %v", r, !want)
		}
	}
}
