package metamathqa

import "testing"

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
