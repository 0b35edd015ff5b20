package tokenizer

import "golang.org/x/text/unicode/norm"

// NFC returns s in Unicode Normalization Form C (canonical decomposition
// followed by canonical composition), the normalizer of the Qwen2 tokenizers.
// It is golang.org/x/text/unicode/norm (Unicode 17.0 tables under Go 1.26;
// the Rust tokenizers use the unicode-normalization crate, Unicode 16).
// Invalid UTF-8 bytes are kept as they are.
func NFC(s string) string {
	return norm.NFC.String(s)
}
