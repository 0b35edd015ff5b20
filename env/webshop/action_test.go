package webshop

import "testing"

// service-envs.md §4 "parse_action": the spec's examples, plus Python re
// semantics for the rest ("." excludes only "\n").
func TestParseActionSpec(t *testing.T) {
	for _, c := range []struct {
		in, name, arg string
		ok            bool
	}{
		{"search[ ]", "search", " ", true},
		{"search[]", "search[]", "", false},
		{"click[a][b]", "click[a]", "b", true},
		{"search[[x]]", "search[", "x]", true},
		{"search[shoes] extra", "search", "shoes", true},
		{" search[x]", " search", "x", true},
		{"click[Buy Now]", "click", "buy now", true},
		{"Click[x]", "Click", "x", true},
		{"search[a\nb]", "search[a\nb]", "", false},
		{"line1\nsearch[x]", "line1\nsearch[x]", "", false},
		{"[x]", "[x]", "", false},
		{"a[b]\r", "a", "b", true},
		{"click[ΟΔΟΣ]", "click", "οδος", true}, // Python's str.lower: a final sigma
		{"click[İ]", "click", "i\u0307", true},
	} {
		name, arg, ok := ParseAction(c.in)
		if name != c.name || arg != c.arg || ok != c.ok {
			t.Errorf("ParseAction(%q) = %q, %q, %v; want %q, %q, %v", c.in, name, arg, ok, c.name, c.arg, c.ok)
		}
	}
}

// service-envs.md §4 "action_is_valid".
func TestActionIsValidSpec(t *testing.T) {
	clickables := []string{"back to search", "b0001", "search", "Red"}
	for _, c := range []struct {
		in        string
		searchBar bool
		want      bool
	}{
		{"search[ ]", true, true}, // arg " " is non-empty
		{"search[x]", false, false},
		{"Search[x]", true, false}, // name compared case-sensitively
		{"click[B0001]", false, true},
		{"click[search]", false, false},
		{"click[red]", false, false}, // option values stay as-is: "Red" never matches
		{"click[nope]", false, false},
		{"buy", true, false},
	} {
		if got := ActionIsValid(c.in, c.searchBar, clickables); got != c.want {
			t.Errorf("ActionIsValid(%q, %v) = %v, want %v", c.in, c.searchBar, got, c.want)
		}
	}
}
