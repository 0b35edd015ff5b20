package apicheck

import (
	"sort"
	"strings"
	"testing"
)

// The fixture module leaks an internal type in seven exported places and
// keeps it private in four; the checker must find exactly the seven.
func TestCheckFindsEveryLeak(t *testing.T) {
	vs, err := Check("testdata/leaky", "./...")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, v := range vs {
		got = append(got, v.Ident+" -> "+v.Internal)
	}
	sort.Strings(got)
	want := []string{
		"pub.Alias -> leaky/internal/secret.Handle",
		"pub.Box.Get -> leaky/internal/secret.Kind",
		"pub.Box.H -> leaky/internal/secret.Handle",
		"pub.Default -> leaky/internal/secret.Kind",
		"pub.Doer.Do -> leaky/internal/secret.Kind",
		"pub.Open -> leaky/internal/secret.Handle",
		"pub.Use -> leaky/internal/secret.Handle",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("violations:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestIsInternal(t *testing.T) {
	for path, want := range map[string]bool{
		"ragen/internal/torch/csrc": true, "ragen/internal": true, "internal/x": true,
		"ragen/torch": false, "ragen/internalize": false,
	} {
		if IsInternal(path) != want {
			t.Errorf("IsInternal(%q) = %v", path, !want)
		}
	}
}
