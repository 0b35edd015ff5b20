package ragen

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"ragen/internal/pystr"
)

func TestParseResponse(t *testing.T) {
	tests := []struct {
		name       string
		raw        string
		think      bool
		maxActions int
		resp       string
		actions    []string
	}{
		{"think+answer", "<think> go right </think> <answer> Right || Up </answer>", true, 2,
			"<think>go right</think><answer>Right || Up</answer>", []string{"Right", "Up"}},
		{"cap rebuilds the answer", "<think>x</think><answer>A||B ||C</answer>", true, 2,
			"<think>x</think><answer>A || B</answer>", []string{"A", "B"}},
		{"empty pieces dropped, no rebuild under cap", "<think>x</think><answer>A|| ||B</answer>", true, 3,
			"<think>x</think><answer>A|| ||B</answer>", []string{"A", "B"}},
		{"no match keeps raw", "<think>thinking forever", true, 2, "<think>thinking forever", nil},
		{"special strings removed", "<think><think>a<|im_end|></think>\n<answer><answer> L </answer>", true, 2,
			"<think>a</think><answer>L</answer>", []string{"L"}},
		{"first match wins", "<think>1</think><answer>A</answer><think>2</think><answer>B</answer>", true, 2,
			"<think>1</think><answer>A</answer>", []string{"A"}},
		{"answer only mode", "<answer> yes </answer> trailing", false, 1, "<answer>yes</answer>", []string{"yes"}},
		// enable_think=false: the injected <answer> prefix swallows the think block.
		{"think text in answer mode", "<answer><think>t</think><answer>X</answer>", false, 2,
			"<answer>tX</answer>", []string{"tX"}},
		{"empty answer", "<think>t</think><answer>  </answer>", true, 2, "<think>t</think><answer></answer>", nil},
		{"newlines inside (DOTALL)", "<think>a\nb</think>\n\n<answer>\nUp\n</answer>", true, 2,
			"<think>a\nb</think><answer>Up</answer>", []string{"Up"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp, actions := parseResponse(tc.raw, tc.think, "||", tc.maxActions)
			assert.Equal(t, tc.resp, resp)
			assert.Equal(t, tc.actions, actions)
		})
	}
}

func TestParseResponsePrependsPrefix(t *testing.T) {
	cm := &ContextManager{cfg: DefaultConfig()}
	in := cm.ParseResponse(" plan </think><answer>Left</answer>")
	assert.Equal(t, "<think> plan </think><answer>Left</answer>", in.LLMRawResponse)
	assert.Equal(t, "<think>plan</think><answer>Left</answer>", in.LLMResponse)
	assert.Equal(t, []string{"Left"}, in.Actions)
}

// FuzzParseResponse: never panics; either the pattern matched (the cleaned
// response has the canonical form, actions are trimmed, non-empty, capped)
// or the raw text comes back with no actions (→ format penalty).
func FuzzParseResponse(f *testing.F) {
	for _, s := range []string{"<think>a</think><answer>b||c</answer>", "<answer></answer>", "", "<think></think>  <answer>||</answer>", "<answer>\u00a0x\u2028</answer>"} {
		f.Add(s, true, 2)
		f.Add(s, false, 1)
	}
	f.Fuzz(func(t *testing.T, raw string, think bool, maxActions int) {
		maxActions = 1 + abs(maxActions)%5
		resp, actions := parseResponse(raw, think, "||", maxActions)
		if len(actions) == 0 && resp == raw {
			return
		}
		if think {
			if !strings.HasPrefix(resp, "<think>") || !strings.HasSuffix(resp, "</answer>") {
				t.Fatalf("bad cleaned response %q", resp)
			}
		} else if !strings.HasPrefix(resp, "<answer>") || !strings.HasSuffix(resp, "</answer>") {
			t.Fatalf("bad cleaned response %q", resp)
		}
		if len(actions) > maxActions {
			t.Fatalf("%d actions > cap %d", len(actions), maxActions)
		}
		for _, a := range actions {
			if a == "" || a != pystr.Strip(a) || strings.Contains(a, "||") {
				t.Fatalf("bad action %q", a)
			}
			if utf8.ValidString(raw) && !utf8.ValidString(a) {
				t.Fatalf("invalid utf8 action %q", a)
			}
		}
	})
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// FuzzWritePyString: the escaped string is valid JSON that decodes back to
// the input (for valid UTF-8) and is pure ASCII, like json.dumps.
func FuzzWritePyString(f *testing.F) {
	for _, s := range []string{"", "a\"b", "ü€😀\n\t\x00", "<|im_end|>"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var b strings.Builder
		writePyString(&b, s)
		out := b.String()
		for i := 0; i < len(out); i++ {
			if out[i] >= 0x80 {
				t.Fatalf("non-ASCII byte in %q", out)
			}
		}
		var back string
		if err := json.Unmarshal([]byte(out), &back); err != nil {
			t.Fatalf("invalid JSON %q: %v", out, err)
		}
		if utf8.ValidString(s) && back != s {
			t.Fatalf("round trip %q → %q", s, back)
		}
	})
}
