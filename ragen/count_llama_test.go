package ragen

import (
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"ragen/env"
	"ragen/llm/tokenizer"
)

// Upstream counts a templated prompt's tokens with
// add_special_tokens=False: Llama-3's template writes its own
// <|begin_of_text|>, and the tokenizer's BOS must not be counted again.
func TestCountTokensNoExtraBOS(t *testing.T) {
	src := filepath.Join("..", "llm", "tokenizer", "testdata", "llama31")
	dir := t.TempDir()
	gz, err := os.ReadFile(filepath.Join(src, "tokenizer.json.gz"))
	require.NoError(t, err)
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	require.NoError(t, err)
	tj, err := io.ReadAll(zr)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "tokenizer.json"), tj, 0o644))
	tc, err := os.ReadFile(filepath.Join(src, "tokenizer_config.json"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "tokenizer_config.json"), tc, 0o644))
	tok, err := tokenizer.LoadHF(dir)
	require.NoError(t, err)

	cfg := testConfig(1, []string{"Line"}, []int{1})
	cm, err := NewContextManager(cfg, env.ModeTrain, tok, &testProvider{})
	require.NoError(t, err)
	msgs := []tokenizer.Message{{Role: "system", Content: "S"}, {Role: "user", Content: "hello"}}
	text, err := tok.ApplyChatTemplate(msgs, true)
	require.NoError(t, err)
	n, err := cm.countTokens(msgs, true)
	require.NoError(t, err)
	require.Equal(t, len(tok.EncodeSpecial(text, false)), n)
	require.Equal(t, len(tok.Encode(text))-1, n) // Encode adds the tokenizer's BOS
}
