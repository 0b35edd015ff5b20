package sokoban

import "testing"

// Values from CPython 3.11 with PYTHONHASHSEED=0:
//
//	hash(s), abs(hash(s)) % 2**32
func TestPyStrHash(t *testing.T) {
	tests := []struct {
		s    string
		hash int64
		mod  int64
	}{
		{"", 0, 0},
		{"a", 4644417185603328019, 3097171987},
		{"0", 5313149338359954478, 1200356398},
		{"1", -6863858015672933803, 3169263019},
		{"12345", 2347366186950309369, 854570489},
		{"-7", 1751014535502488156, 1496048220},
		{"abcdefgh", 4574395652268504554, 193869290},
		{"abcdefghi", -532774252720507163, 786516251},
		{"4294967295", -7395580164763800411, 4104901467},
	}
	for _, tc := range tests {
		if got := pyStrHash(tc.s); got != tc.hash {
			t.Errorf("hash(%q) = %d, want %d", tc.s, got, tc.hash)
		}
	}
	for _, tc := range []struct{ seed, want int64 }{{0, 1200356398}, {1, 3169263019}, {12345, 854570489}, {-7, 1496048220}, {4294967295, 4104901467}} {
		if got := RetrySeed(tc.seed); got != tc.want {
			t.Errorf("RetrySeed(%d) = %d, want %d", tc.seed, got, tc.want)
		}
	}
}
