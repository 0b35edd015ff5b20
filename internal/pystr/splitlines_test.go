package pystr

import "testing"

// TestSplitLines: CPython's "a\r\nb\rc\x85d\n\ne\n".splitlines() is a, b,
// c, d, an empty line, e; "".splitlines() is empty.
func TestSplitLines(t *testing.T) {
	got := SplitLines("a\r\nb\rc\u0085d\n\ne\n")
	want := []string{"a", "b", "c", "d", "", "e"}
	if len(got) != len(want) {
		t.Fatalf("SplitLines = %q, want %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("SplitLines = %q, want %q", got, want)
		}
	}
	if n := len(SplitLines("")); n != 0 {
		t.Errorf("SplitLines(\"\") has %d lines, want 0", n)
	}
}
