package tokenizer

import (
	"compress/gzip"
	"encoding/json"
	"os"
	"testing"
	"unicode/utf8"
)

func readGzip(t testing.TB, path string) []byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	var b []byte
	buf := make([]byte, 1<<16)
	for {
		n, err := zr.Read(buf)
		b = append(b, buf[:n]...)
		if err != nil {
			break
		}
	}
	return b
}

// TestNFCFixtures compares NFC with Python's unicodedata.normalize on every
// decomposable code point and random mark sequences
// (scripts/tokenizer/gen_nfc_cases.py).
func TestNFCFixtures(t *testing.T) {
	var cases [][2]string
	if err := json.Unmarshal(readGzip(t, "testdata/nfc_cases.json.gz"), &cases); err != nil {
		t.Fatal(err)
	}
	if len(cases) < 10000 {
		t.Fatalf("only %d cases", len(cases))
	}
	bad := 0
	for _, c := range cases {
		if got := NFC(c[0]); got != c[1] {
			bad++
			if bad < 10 {
				t.Errorf("NFC(%+q) = %+q, want %+q", c[0], got, c[1])
			}
		}
	}
	if bad > 0 {
		t.Errorf("%d/%d mismatches", bad, len(cases))
	}
}

func TestNFC(t *testing.T) {
	tests := []struct{ in, want string }{
		{"abc", "abc"},
		// a + U+0301 composes to á (U+00E1).
		{"a\u0301", "\u00e1"},
		// Ångström sign U+212B is a singleton: decomposes to Å (U+00C5), never recomposes to itself.
		{"\u212b", "\u00c5"},
		// Marks are reordered by class: dot below (220) before acute (230); e + dot below
		// composes to ẹ (U+1EB9); U+1EB9 + U+0301 has no composite, so the acute stays.
		{"e\u0301\u0323", "\u1eb9\u0301"},
		// Hangul L V T jamo compose to the syllable 각 (U+AC01).
		{"\u1100\u1161\u11a8", "\uac01"},
		// Invalid bytes are kept; the parts around them are normalised.
		{"a\u0301\xffe\u0301", "\u00e1\xff\u00e9"},
		// A non-starter at the start stays.
		{"\u0301a", "\u0301a"},
	}
	for _, tc := range tests {
		if got := NFC(tc.in); got != tc.want {
			t.Errorf("NFC(%+q) = %+q, want %+q", tc.in, got, tc.want)
		}
	}
}

func FuzzNFC(f *testing.F) {
	for _, s := range []string{"a\u0301", "\u1100\u1161\u11a8", "e\u0301\u0323", "\xff\u0301"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n := NFC(s)
		if NFC(n) != n {
			t.Fatalf("NFC not idempotent on %+q", s)
		}
		if utf8.ValidString(s) != utf8.ValidString(n) {
			t.Fatalf("validity changed for %+q", s)
		}
	})
}
