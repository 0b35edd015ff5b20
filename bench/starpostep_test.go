package bench

import (
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"ragen/llm"
)

// The StarPO step's replies are random sequences of qwenTokenizer's word
// tokens; what the step measures relies on such a reply, after the forced
// "<think>", re-tokenizing to the very ids generated.
func TestQwenTokenizerWords(t *testing.T) {
	dir := t.TempDir()
	list, err := qwenTokenizer(".", dir)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := llm.LoadTokenizer(dir)
	if err != nil {
		t.Fatal(err)
	}
	var ids []int
	for _, f := range strings.Split(strings.Trim(list, "[]"), ",") {
		id, err := strconv.Atoi(f)
		if err != nil {
			t.Fatalf("list item %q: %v", f, err)
		}
		ids = append(ids, id)
	}
	if len(ids) < 10000 {
		t.Fatalf("%d word tokens", len(ids))
	}
	r := rand.New(rand.NewPCG(1, 2))
	head := tok.Encode("<|im_start|>assistant\n<think>")
	for range 50 {
		reply := make([]int, 400)
		for i := range reply {
			reply[i] = ids[r.IntN(len(ids))]
		}
		text := tok.Decode(reply)
		got := tok.Encode("<|im_start|>assistant\n<think>" + text + "<|im_end|>\n")
		want := append(append(append([]int(nil), head...), reply...), tok.Encode("<|im_end|>\n")...)
		if len(got) != len(want) {
			t.Fatalf("%q re-tokenizes to %d ids, generated %d", text, len(got), len(want))
		}
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("%q: id %d is %d, generated %d", text, i, got[i], want[i])
			}
		}
	}
	if _, err := qwenTokenizer(t.TempDir(), dir); err == nil || !strings.Contains(err.Error(), "Qwen2.5 tokenizer") {
		t.Fatalf("no vendored tokenizer: %v", err)
	}
}
