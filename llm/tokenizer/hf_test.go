package tokenizer

import (
	"encoding/json"
	"os"
	"reflect"
	"sync"
	"testing"
)

var (
	qwen25Once sync.Once
	qwen25Tok  *HF
	qwen25Err  error
)

// loadQwen25 loads the committed Qwen2.5 tokenizer folder (tokenizer.json is
// stored gzip-compressed; scripts/tokenizer/derive_qwen25.py made it).
func loadQwen25(t testing.TB) *HF {
	t.Helper()
	qwen25Once.Do(func() {
		tj := readGzip(t, "testdata/qwen25/tokenizer.json.gz")
		tc, err := os.ReadFile("testdata/qwen25/tokenizer_config.json")
		if err != nil {
			qwen25Err = err
			return
		}
		qwen25Tok, qwen25Err = ParseHF(tj, tc, nil)
	})
	if qwen25Err != nil {
		t.Fatal(qwen25Err)
	}
	return qwen25Tok
}

type encodeFixture struct {
	Text string `json:"text"`
	IDs  []int  `json:"ids"`
}

type decodeFixture struct {
	IDs  []int  `json:"ids"`
	Text string `json:"text"`
	Skip string `json:"skip"`
}

type fixtures struct {
	Encode []encodeFixture `json:"encode"`
	Decode []decodeFixture `json:"decode"`
}

func loadFixtures(t testing.TB) fixtures {
	t.Helper()
	var f fixtures
	if err := json.Unmarshal(readGzip(t, "testdata/qwen25_fixtures.json.gz"), &f); err != nil {
		t.Fatal(err)
	}
	return f
}

// TestHFEncodeFixtures checks exact id equality with the Rust Hugging Face
// tokenizers library (scripts/tokenizer/gen_fixtures.js) on every fixture
// string, and the decode round trip.
func TestHFEncodeFixtures(t *testing.T) {
	tok := loadQwen25(t)
	f := loadFixtures(t)
	if len(f.Encode) < 2000 {
		t.Fatalf("only %d encode fixtures", len(f.Encode))
	}
	bad := 0
	for _, fx := range f.Encode {
		got := tok.Encode(fx.Text)
		if !reflect.DeepEqual(got, fx.IDs) && !(len(got) == 0 && len(fx.IDs) == 0) {
			bad++
			if bad <= 10 {
				t.Errorf("Encode(%+q)\n got %v\nwant %v", fx.Text, got, fx.IDs)
			}
			continue
		}
		if back := tok.Decode(got); back != NFC(fx.Text) {
			t.Errorf("Decode(Encode(%+q)) = %+q", fx.Text, back)
		}
	}
	if bad > 0 {
		t.Errorf("%d/%d encode mismatches", bad, len(f.Encode))
	}
}
