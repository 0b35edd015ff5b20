package rule

import (
	"errors"
	"fmt"
	"testing"
)

func TestUnknownSortsAndSuggests(t *testing.T) {
	p := Unknown("a.mode", "cpoy", []string{"delete", "copy"})
	if want := `config: a.mode: unknown value "cpoy" (did you mean copy?); valid: copy, delete`; p.Error() != want {
		t.Fatalf("got %q, want %q", p.Error(), want)
	}
	if p := UnknownLike("a.m", "REWARDS", "rewards", []string{"reward"}); p.Msg != `unknown value "REWARDS" (did you mean reward?); valid: reward` {
		t.Fatalf("UnknownLike: %q", p.Msg)
	}
}

func TestAtLeastAndNearestMultiples(t *testing.T) {
	if err := AtLeast("k", 1, 1); err != nil {
		t.Fatal(err)
	}
	if err := AtLeast("k", 0, 1); err == nil || err.Error() != "config: k: 0 is out of range: want >= 1" {
		t.Fatalf("AtLeast: %v", err)
	}
	for _, c := range []struct {
		x, step int
		want    string
	}{{30, 4, "28 or 32"}, {3, 4, "4"}, {8, 16, "16"}, {5, 0, ""}} {
		if got := NearestMultiples(c.x, c.step); got != c.want {
			t.Errorf("NearestMultiples(%d, %d) = %q, want %q", c.x, c.step, got, c.want)
		}
	}
}

func TestProblemsFlattens(t *testing.T) {
	a, b := Errorf("x", "bad"), Errorf("y", "worse")
	plain := errors.New("other")
	wrapped := fmt.Errorf("pkg: %w", Errorf("z", "hidden"))
	ps, other := Problems(errors.Join(a, errors.Join(nil, b, plain), wrapped, nil))
	if len(ps) != 2 || ps[0] != a || ps[1] != b {
		t.Fatalf("problems = %v", ps)
	}
	if len(other) != 2 || other[0] != plain || other[1] != wrapped {
		t.Fatalf("other = %v", other)
	}
	if ps, other := Problems(nil); ps != nil || other != nil {
		t.Fatalf("nil: %v %v", ps, other)
	}
	if w := (Problem{Key: "k", Msg: "m", Warning: true}); w.Error() != "config: warning: k: m" {
		t.Fatal(w.Error())
	}
}
