package metamathqa

import "testing"

// Expected values are CPython 3.11's str.lower().
func TestPyLower(t *testing.T) {
	tests := map[string]string{
		"AİB": "ai̇b", "ΑΣ": "ας", "ΣΑ": "σα", "Σ": "σ", "ΑΣ.": "ας.", "ΑΣ'Α": "ασ'α", "Α.Σ": "α.ς",
		"ΑΣ Β": "ας β", "aΣb": "aσb", "ΌΣΟΣ": "όσος", "ΣΣ": "σς", "AΣ1": "aς1", "İİ": "i̇i̇",
		"PLACE 5 AT ROW 2": "place 5 at row 2",
	}
	for in, want := range tests {
		if got := pyLower(in); got != want {
			t.Errorf("pyLower(%q) = %q, want %q", in, got, want)
		}
	}
}

// CPython: "AİB".lower() is "ai̇b" (with U+0307), so "aib" is wrong and
// "ai̇b" right; final sigma: "ΟΣ" lowers to "ος", matching "ος" but not "οσ".
func TestCheckAnswerPythonLower(t *testing.T) {
	tests := []struct {
		answer, reference string
		correct           bool
	}{
		{"aib", "AİB", false},
		{"ai\u0307b", "AİB", true},
		{"ος", "ΟΣ", true},
		{"οσ", "ΟΣ", false},
	}
	for _, tc := range tests {
		if got, _ := CheckAnswer(tc.answer, tc.reference, true); got != tc.correct {
			t.Errorf("CheckAnswer(%q, %q) = %v, want %v", tc.answer, tc.reference, got, tc.correct)
		}
	}
}
