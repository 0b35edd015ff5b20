package pystr

import "testing"

// TestQuote checks Quote against Python 3's repr() of the same strings.
func TestQuote(t *testing.T) {
	for s, want := range map[string]string{
		"it's":                                `"it's"`,
		`say "hi" it's`:                       `'say "hi" it\'s'`,
		"a\\b\n\t\r\x01\x7f":                  `'a\\b\n\t\r\x01\x7f'`,
		"é\u00a0\u2028\U0001F600\u200b\u0085": `'é\xa0\u2028😀\u200b\x85'`,
		"":                                    `''`,
	} {
		if got := Quote(s); got != want {
			t.Errorf("Quote(%q) = %s, want %s", s, got, want)
		}
	}
}
