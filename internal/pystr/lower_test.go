package pystr

import "testing"

// Expected values are CPython 3.11's str.lower().
func TestPyLower(t *testing.T) {
	tests := map[string]string{
		"AİB": "ai̇b", "ΑΣ": "ας", "ΣΑ": "σα", "Σ": "σ", "ΑΣ.": "ας.", "ΑΣ'Α": "ασ'α", "Α.Σ": "α.ς",
		"ΑΣ Β": "ας β", "aΣb": "aσb", "ΌΣΟΣ": "όσος", "ΣΣ": "σς", "AΣ1": "aς1", "İİ": "i̇i̇",
		"PLACE 5 AT ROW 2": "place 5 at row 2",
	}
	for in, want := range tests {
		if got := Lower(in); got != want {
			t.Errorf("Lower(%q) = %q, want %q", in, got, want)
		}
	}
}
