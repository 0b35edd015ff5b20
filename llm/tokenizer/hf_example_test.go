package tokenizer_test

import (
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"ragen/llm/tokenizer"
)

// ExampleLoadHF loads a Qwen2.5 tokenizer folder (here written from the
// compressed test copy) and tokenizes a chat prompt.
func ExampleLoadHF() {
	dir, err := os.MkdirTemp("", "qwen25")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	f, err := os.Open("testdata/qwen25/tokenizer.json.gz")
	if err != nil {
		panic(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		panic(err)
	}
	tj, err := io.ReadAll(zr)
	if err != nil {
		panic(err)
	}
	cfg, err := os.ReadFile("testdata/qwen25/tokenizer_config.json")
	if err != nil {
		panic(err)
	}
	_ = os.WriteFile(filepath.Join(dir, tokenizer.TokenizerFile), tj, 0o644)
	_ = os.WriteFile(filepath.Join(dir, tokenizer.TokenizerConfigFile), cfg, 0o644)

	tok, err := tokenizer.LoadHF(dir)
	if err != nil {
		panic(err)
	}
	prompt, err := tok.ApplyChatTemplate([]tokenizer.Message{{Role: "user", Content: "Hi"}}, true)
	if err != nil {
		panic(err)
	}
	ids := tok.Encode(prompt)
	fmt.Println(len(ids), ids[len(ids)-6:])
	fmt.Println(tok.Encode("Hello world"), tok.EOSIDs(), tok.PadID())
	// Output:
	// 30 [13048 151645 198 151644 77091 198]
	// [9707 1879] [151645] 151643
}
