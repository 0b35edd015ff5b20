package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"ragen/env"
)

// Following the solver's plan solves the level: the test asks the env for
// its plan, then types it in as a person would.
func TestSolveSokobanByHand(t *testing.T) {
	tags, _ := env.DefaultTags()
	e, err := tags["CoordSokoban"].Build()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Reset(context.Background(), 3, env.ModeVal); err != nil {
		t.Fatal(err)
	}
	plan, ok, err := env.Innermost(e).(env.Oracle).OracleActions(100)
	if err != nil || !ok {
		t.Fatalf("no plan: %v %v", ok, err)
	}
	var out bytes.Buffer
	in := "?\nactions\n" + strings.Join(plan, "\n") + "\n"
	if err := run(context.Background(), "CoordSokoban", 3, strings.NewReader(in), &out); err != nil {
		t.Fatal(err)
	}
	t.Log(out.String())
	for _, want := range []string{"solver: [", "episode over", "done true"} {
		if !strings.Contains(out.String(), want) {
			t.Fatalf("missing %q in:\n%s", want, out.String())
		}
	}
}

func TestUnknownTag(t *testing.T) {
	err := run(context.Background(), "Sokobn", 0, strings.NewReader(""), &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "CoordSokoban") {
		t.Fatalf("err = %v", err)
	}
}
