package envtest

import (
	"context"
	"testing"

	"ragen/env"
)

// Built is an env with the error of building it, so that a constructor's
// two results can be passed on in one argument: Build(New(cfg)).
type Built struct {
	Env env.BaseEnv
	Err error
}

// Build pairs a constructor's results.
func Build[E env.BaseEnv](e E, err error) Built { return Built{Env: e, Err: err} }

// BenchReset measures Reset over successive seeds and reports resets/s.
func BenchReset(b *testing.B, built Built) {
	b.Helper()
	if built.Err != nil {
		b.Fatal(built.Err)
	}
	e := built.Env
	ctx := context.Background()
	var seed int64
	for b.Loop() {
		if _, err := e.Reset(ctx, seed, env.ModeTrain); err != nil {
			b.Fatal(err)
		}
		seed++
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "resets/s")
}

// CheckPromptDefaults checks that the prompt facts registered for envType
// (env.PromptDefaultsFor, in upstream's dict order) agree with the env's
// default config: observation format, grid vocabulary and action names
// (action ids 1..n in order).
func CheckPromptDefaults(t *testing.T, envType, format string, vocab map[string]string, actions map[int]string) {
	t.Helper()
	d, ok := env.PromptDefaultsFor(envType)
	if !ok {
		t.Fatalf("no prompt defaults registered for %q", envType)
	}
	if len(d.GridVocab) != len(vocab) || len(d.ActionNames) != len(actions) || d.ObservationFormat != format {
		t.Fatalf("prompt defaults %+v vs config", d)
	}
	for _, v := range d.GridVocab {
		if vocab[v[0]] != v[1] {
			t.Errorf("vocab %q: %q vs %q", v[0], v[1], vocab[v[0]])
		}
	}
	for i, name := range d.ActionNames {
		if actions[i+1] != name {
			t.Errorf("action %d: %q vs %q", i+1, name, actions[i+1])
		}
	}
}
