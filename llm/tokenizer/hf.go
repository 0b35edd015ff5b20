package tokenizer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// File names of a Hugging Face tokenizer folder.
const (
	TokenizerFile        = "tokenizer.json"
	TokenizerConfigFile  = "tokenizer_config.json"
	GenerationConfigFile = "generation_config.json"
)

// HF is a Hugging Face byte-level BPE tokenizer (tokenizer.json of the
// Qwen2 family) with the chat template and special tokens of
// tokenizer_config.json. An HF is safe for concurrent use.
type HF struct {
	model     *bpeModel
	normalize bool // NFC normalizer
	maxDigits int  // digits per pre-token: 1 (Qwen2) or 3 (Llama-3)

	// Special tokens a TemplateProcessing post-processor puts around a
	// single sequence (add_special_tokens=True), e.g. Llama-3's BOS.
	prefixIDs, suffixIDs []int

	idToken []string // token string as stored (byte-level or added content); "" for holes
	idBytes [][]byte // bytes each id decodes to
	special []bool   // special added tokens (skipped by DecodeSkipSpecial)
	valid   []bool   // id exists
	added   map[string]int
	vocab   map[string]int // byte-level token string -> id

	rawMatch  *literalMatcher // added tokens with normalized=false
	normMatch *literalMatcher // added tokens with normalized=true

	eos      []int
	pad      int
	bosToken string
	eosToken string
	padToken string

	chatTemplate string
	tmplOnce     sync.Once
	tmpl         *Template
	tmplErr      error

	tokJSON, cfgJSON, genJSON []byte
}

var _ Tokenizer = (*HF)(nil)

// LoadHF reads dir/tokenizer.json and dir/tokenizer_config.json, and
// dir/generation_config.json if present (its eos_token_id list adds to
// EOSIDs, as generation does in transformers).
func LoadHF(dir string) (*HF, error) {
	tj, err := os.ReadFile(filepath.Join(dir, TokenizerFile))
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %w", err)
	}
	tc, err := os.ReadFile(filepath.Join(dir, TokenizerConfigFile))
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %w", err)
	}
	gc, err := os.ReadFile(filepath.Join(dir, GenerationConfigFile))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("tokenizer: %w", err)
	}
	return ParseHF(tj, tc, gc)
}

// ParseHF builds an HF from the contents of tokenizer.json,
// tokenizer_config.json and (optional, may be nil) generation_config.json.
func ParseHF(tokenizerJSON, tokenizerConfigJSON, generationConfigJSON []byte) (*HF, error) {
	h := &HF{tokJSON: tokenizerJSON, cfgJSON: tokenizerConfigJSON, genJSON: generationConfigJSON, pad: -1}
	if err := h.parseTokenizer(tokenizerJSON); err != nil {
		return nil, fmt.Errorf("tokenizer: %s: %w", TokenizerFile, err)
	}
	if err := h.parseConfig(tokenizerConfigJSON); err != nil {
		return nil, fmt.Errorf("tokenizer: %s: %w", TokenizerConfigFile, err)
	}
	if len(generationConfigJSON) > 0 {
		if err := h.parseGenerationConfig(generationConfigJSON); err != nil {
			return nil, fmt.Errorf("tokenizer: %s: %w", GenerationConfigFile, err)
		}
	}
	return h, nil
}

// Save writes the tokenizer files back into dir (created if needed) exactly
// as they were read, so an exported model folder loads the same tokenizer.
func (h *HF) Save(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("tokenizer: save: %w", err)
	}
	files := []struct {
		name string
		data []byte
	}{{TokenizerFile, h.tokJSON}, {TokenizerConfigFile, h.cfgJSON}, {GenerationConfigFile, h.genJSON}}
	for _, f := range files {
		if f.data == nil {
			continue
		}
		if err := os.WriteFile(filepath.Join(dir, f.name), f.data, 0o644); err != nil {
			return fmt.Errorf("tokenizer: save: %w", err)
		}
	}
	return nil
}

type hfAddedToken struct {
	ID         *int   `json:"id"`
	Content    string `json:"content"`
	SingleWord bool   `json:"single_word"`
	LStrip     bool   `json:"lstrip"`
	RStrip     bool   `json:"rstrip"`
	Normalized bool   `json:"normalized"`
	Special    bool   `json:"special"`
}

type hfTyped struct {
	Type string `json:"type"`
}

type hfModel struct {
	Type                    *string          `json:"type"`
	Dropout                 *float64         `json:"dropout"`
	UnkToken                *string          `json:"unk_token"`
	ContinuingSubwordPrefix *string          `json:"continuing_subword_prefix"`
	EndOfWordSuffix         *string          `json:"end_of_word_suffix"`
	ByteFallback            bool             `json:"byte_fallback"`
	IgnoreMerges            bool             `json:"ignore_merges"`
	Vocab                   map[string]int   `json:"vocab"`
	Merges                  *json.RawMessage `json:"merges"`
}

type hfFile struct {
	AddedTokens   []hfAddedToken  `json:"added_tokens"`
	Normalizer    json.RawMessage `json:"normalizer"`
	PreTokenizer  json.RawMessage `json:"pre_tokenizer"`
	PostProcessor json.RawMessage `json:"post_processor"`
	Decoder       json.RawMessage `json:"decoder"`
	Model         *hfModel        `json:"model"`
}

func isNull(b json.RawMessage) bool {
	b = bytes.TrimSpace(b)
	return len(b) == 0 || string(b) == "null"
}

func (h *HF) parseTokenizer(data []byte) error {
	var f hfFile
	if err := json.Unmarshal(data, &f); err != nil {
		return fmt.Errorf("invalid JSON: %w", err)
	}
	if f.Model == nil {
		return errors.New("model: missing")
	}
	if err := h.parseNormalizer(f.Normalizer); err != nil {
		return err
	}
	var err error
	if h.maxDigits, err = checkPreTokenizer(f.PreTokenizer); err != nil {
		return err
	}
	if err := checkByteLevel("decoder", f.Decoder, false); err != nil {
		return err
	}
	if err := h.parseModel(f.Model); err != nil {
		return err
	}
	if err := h.parseAdded(f.AddedTokens); err != nil {
		return err
	}
	if !isNull(f.PostProcessor) {
		return h.parsePostProcessor("post_processor", f.PostProcessor)
	}
	return nil
}

// parsePostProcessor accepts ByteLevel (offsets only), TemplateProcessing
// (special tokens around a single sequence) and a Sequence of them.
func (h *HF) parsePostProcessor(field string, raw json.RawMessage) error {
	var p struct {
		Type       string            `json:"type"`
		Processors []json.RawMessage `json:"processors"`
		Single     []struct {
			SpecialToken *struct {
				ID string `json:"id"`
			} `json:"SpecialToken"`
			Sequence *struct {
				ID string `json:"id"`
			} `json:"Sequence"`
		} `json:"single"`
		SpecialTokens map[string]struct {
			IDs []int `json:"ids"`
		} `json:"special_tokens"`
	}
	if err := json.Unmarshal(raw, &p); err != nil {
		return fmt.Errorf("%s: %w", field, err)
	}
	switch p.Type {
	case "ByteLevel":
		return checkByteLevel(field, raw, false)
	case "Sequence":
		for i, sub := range p.Processors {
			if err := h.parsePostProcessor(fmt.Sprintf("%s.processors[%d]", field, i), sub); err != nil {
				return err
			}
		}
		return nil
	case "TemplateProcessing":
		seen := false
		for i, piece := range p.Single {
			switch {
			case piece.Sequence != nil:
				if piece.Sequence.ID != "A" || seen {
					return fmt.Errorf("%s.single[%d]: unsupported sequence %q", field, i, piece.Sequence.ID)
				}
				seen = true
			case piece.SpecialToken != nil:
				st, ok := p.SpecialTokens[piece.SpecialToken.ID]
				if !ok || len(st.IDs) == 0 {
					return fmt.Errorf("%s.single[%d]: special token %q not in special_tokens", field, i, piece.SpecialToken.ID)
				}
				for _, id := range st.IDs {
					if id < 0 || id >= len(h.valid) || !h.valid[id] {
						return fmt.Errorf("%s.special_tokens[%q]: id %d is not a token", field, piece.SpecialToken.ID, id)
					}
				}
				if seen {
					h.suffixIDs = append(h.suffixIDs, st.IDs...)
				} else {
					h.prefixIDs = append(h.prefixIDs, st.IDs...)
				}
			default:
				return fmt.Errorf("%s.single[%d]: want SpecialToken or Sequence", field, i)
			}
		}
		if !seen {
			return fmt.Errorf("%s.single: no Sequence A", field)
		}
		return nil
	}
	return fmt.Errorf("%s: unsupported type %q", field, p.Type)
}

func (h *HF) parseNormalizer(raw json.RawMessage) error {
	if isNull(raw) {
		return nil
	}
	var n struct {
		Type        string            `json:"type"`
		Normalizers []json.RawMessage `json:"normalizers"`
	}
	if err := json.Unmarshal(raw, &n); err != nil {
		return fmt.Errorf("normalizer: %w", err)
	}
	switch n.Type {
	case "NFC":
		h.normalize = true
		return nil
	case "Sequence":
		for i, sub := range n.Normalizers {
			var t hfTyped
			if err := json.Unmarshal(sub, &t); err != nil || t.Type != "NFC" {
				return fmt.Errorf("normalizer.normalizers[%d]: unsupported normalizer %s (only NFC is implemented)", i, compact(sub))
			}
			h.normalize = true
		}
		return nil
	}
	return fmt.Errorf("normalizer: unsupported type %q (only NFC is implemented)", n.Type)
}

// checkPreTokenizer accepts exactly the Qwen2 and Llama-3 pre-tokenizers:
// Sequence[Split(pattern, Isolated), ByteLevel(use_regex=false)]. It
// returns the digit group size of the pattern.
func checkPreTokenizer(raw json.RawMessage) (int, error) {
	if isNull(raw) {
		return 0, errors.New("pre_tokenizer: missing (a byte-level BPE needs Split + ByteLevel)")
	}
	var seq struct {
		Type          string            `json:"type"`
		Pretokenizers []json.RawMessage `json:"pretokenizers"`
	}
	if err := json.Unmarshal(raw, &seq); err != nil {
		return 0, fmt.Errorf("pre_tokenizer: %w", err)
	}
	if seq.Type != "Sequence" || len(seq.Pretokenizers) != 2 {
		return 0, fmt.Errorf("pre_tokenizer: unsupported %s (want Sequence[Split, ByteLevel] as in Qwen2)", compact(raw))
	}
	var split struct {
		Type    string `json:"type"`
		Pattern struct {
			Regex  *string `json:"Regex"`
			String *string `json:"String"`
		} `json:"pattern"`
		Behavior string `json:"behavior"`
		Invert   bool   `json:"invert"`
	}
	if err := json.Unmarshal(seq.Pretokenizers[0], &split); err != nil {
		return 0, fmt.Errorf("pre_tokenizer.pretokenizers[0]: %w", err)
	}
	if split.Type != "Split" {
		return 0, fmt.Errorf("pre_tokenizer.pretokenizers[0].type: %q, want Split", split.Type)
	}
	digits := 0
	if split.Pattern.Regex != nil {
		switch *split.Pattern.Regex {
		case Qwen2SplitPattern:
			digits = 1
		case Llama3SplitPattern:
			digits = 3
		}
	}
	if digits == 0 {
		return 0, fmt.Errorf("pre_tokenizer.pretokenizers[0].pattern: unsupported %s (only the Qwen2 and Llama-3 regexes are implemented)", compact(seq.Pretokenizers[0]))
	}
	if split.Behavior != "Isolated" || split.Invert {
		return 0, fmt.Errorf("pre_tokenizer.pretokenizers[0]: behavior %q invert %v unsupported (want Isolated, false)", split.Behavior, split.Invert)
	}
	return digits, checkByteLevel("pre_tokenizer.pretokenizers[1]", seq.Pretokenizers[1], true)
}

// checkByteLevel checks that raw is a ByteLevel component without
// add_prefix_space; noRegex additionally requires use_regex false (the
// pre-tokenizer, whose splitting the Split step already did).
func checkByteLevel(field string, raw json.RawMessage, noRegex bool) error {
	if isNull(raw) {
		return fmt.Errorf("%s: missing (want ByteLevel)", field)
	}
	var b struct {
		Type           string `json:"type"`
		AddPrefixSpace bool   `json:"add_prefix_space"`
		UseRegex       *bool  `json:"use_regex"`
	}
	if err := json.Unmarshal(raw, &b); err != nil {
		return fmt.Errorf("%s: %w", field, err)
	}
	if b.Type != "ByteLevel" {
		return fmt.Errorf("%s: unsupported type %q (want ByteLevel)", field, b.Type)
	}
	if !noRegex {
		// Decoder and post-processor: add_prefix_space, trim_offsets and
		// use_regex only affect offsets or encoding, not decoding.
		return nil
	}
	if b.AddPrefixSpace {
		return fmt.Errorf("%s: add_prefix_space true is not supported", field)
	}
	if b.UseRegex == nil || *b.UseRegex {
		return fmt.Errorf("%s: use_regex must be false (the split is done by the Split pre-tokenizer)", field)
	}
	return nil
}

func compact(raw json.RawMessage) string {
	s := strings.Join(strings.Fields(string(raw)), " ")
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

func (h *HF) parseModel(m *hfModel) error {
	if m.Type != nil && *m.Type != "BPE" {
		return fmt.Errorf("model.type: %q, only BPE is supported", *m.Type)
	}
	if m.Dropout != nil && *m.Dropout != 0 {
		return fmt.Errorf("model.dropout: %v, BPE dropout is not supported", *m.Dropout)
	}
	if m.ByteFallback {
		return errors.New("model.byte_fallback: true is not supported (byte-level BPE needs no fallback)")
	}
	if m.ContinuingSubwordPrefix != nil && *m.ContinuingSubwordPrefix != "" {
		return fmt.Errorf("model.continuing_subword_prefix: %q is not supported", *m.ContinuingSubwordPrefix)
	}
	if m.EndOfWordSuffix != nil && *m.EndOfWordSuffix != "" {
		return fmt.Errorf("model.end_of_word_suffix: %q is not supported", *m.EndOfWordSuffix)
	}
	if len(m.Vocab) == 0 {
		return errors.New("model.vocab: missing or empty")
	}
	if m.Merges == nil {
		return errors.New("model.merges: missing")
	}
	maxID := -1
	for tok, id := range m.Vocab {
		if id < 0 || id > 1<<24 {
			return fmt.Errorf("model.vocab: token %q has id %d out of range", tok, id)
		}
		if id > maxID {
			maxID = id
		}
	}
	h.grow(maxID + 1)
	bm := &bpeModel{
		merges:      map[pairKey]mergeVal{},
		vocab:       make(map[string]int32, len(m.Vocab)),
		ignoreMerge: m.IgnoreMerges,
		cache:       map[string][]int32{},
	}
	h.vocab = make(map[string]int, len(m.Vocab))
	for tok, id := range m.Vocab {
		if h.valid[id] {
			return fmt.Errorf("model.vocab: id %d used by both %q and %q", id, h.idToken[id], tok)
		}
		b, _ := tokenBytes(tok)
		h.idToken[id], h.idBytes[id], h.valid[id] = tok, b, true
		h.vocab[tok] = id
		bm.vocab[string(b)] = int32(id)
	}
	for b := 0; b < 256; b++ {
		id, ok := m.Vocab[string(byteToRune[b])]
		if !ok {
			return fmt.Errorf("model.vocab: byte 0x%02X (token %q) is missing; a byte-level vocab needs all 256", b, string(byteToRune[b]))
		}
		bm.byteIDs[b] = int32(id)
	}
	pairs, err := parseMerges(*m.Merges)
	if err != nil {
		return err
	}
	bm.merges = make(map[pairKey]mergeVal, len(pairs))
	for rank, p := range pairs {
		a, okA := m.Vocab[p[0]]
		b, okB := m.Vocab[p[1]]
		c, okC := m.Vocab[p[0]+p[1]]
		if !okA || !okB || !okC {
			return fmt.Errorf("model.merges[%d]: %q %q: token not in model.vocab", rank, p[0], p[1])
		}
		k := pairKey{int32(a), int32(b)}
		if _, dup := bm.merges[k]; !dup { // the first (lowest-rank) occurrence wins
			bm.merges[k] = mergeVal{int32(rank), int32(c)}
		}
	}
	h.model = bm
	return nil
}

// parseMerges accepts both forms: ["a b", ...] and [["a","b"], ...].
func parseMerges(raw json.RawMessage) ([][2]string, error) {
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, fmt.Errorf("model.merges: want a list: %w", err)
	}
	out := make([][2]string, len(items))
	for i, it := range items {
		it = bytes.TrimSpace(it)
		if len(it) > 0 && it[0] == '"' {
			var s string
			if err := json.Unmarshal(it, &s); err != nil {
				return nil, fmt.Errorf("model.merges[%d]: %w", i, err)
			}
			a, b, ok := strings.Cut(s, " ")
			if !ok || a == "" || b == "" || strings.Contains(b, " ") {
				return nil, fmt.Errorf("model.merges[%d]: %q is not two tokens separated by one space", i, s)
			}
			out[i] = [2]string{a, b}
			continue
		}
		var p []string
		if err := json.Unmarshal(it, &p); err != nil || len(p) != 2 {
			return nil, fmt.Errorf("model.merges[%d]: %s is neither \"a b\" nor [\"a\", \"b\"]", i, compact(it))
		}
		out[i] = [2]string{p[0], p[1]}
	}
	return out, nil
}

func (h *HF) grow(n int) {
	for len(h.idToken) < n {
		h.idToken = append(h.idToken, "")
		h.idBytes = append(h.idBytes, nil)
		h.special = append(h.special, false)
		h.valid = append(h.valid, false)
	}
}

func (h *HF) parseAdded(toks []hfAddedToken) error {
	h.added = map[string]int{}
	var raw, norm []matchTok
	for i, t := range toks {
		if t.ID == nil {
			return fmt.Errorf("added_tokens[%d]: id missing", i)
		}
		id := *t.ID
		if id < 0 || id > 1<<24 {
			return fmt.Errorf("added_tokens[%d]: id %d out of range", i, id)
		}
		if t.Content == "" {
			return fmt.Errorf("added_tokens[%d]: content empty", i)
		}
		h.grow(id + 1)
		if h.valid[id] && h.idToken[id] != t.Content {
			return fmt.Errorf("added_tokens[%d]: id %d is %q, already used by %q", i, id, t.Content, h.idToken[id])
		}
		h.idToken[id], h.valid[id], h.special[id] = t.Content, true, t.Special
		// The ByteLevel decoder maps the content's characters to bytes, or
		// keeps the content as is if one is not a byte-level character.
		h.idBytes[id], _ = tokenBytes(t.Content)
		h.added[t.Content] = id
		mt := matchTok{content: t.Content, id: id, lstrip: t.LStrip, rstrip: t.RStrip, singleWord: t.SingleWord}
		if t.Normalized && !t.Special {
			norm = append(norm, mt)
		} else {
			raw = append(raw, mt)
		}
	}
	h.rawMatch = newLiteralMatcherTokens(raw)
	h.normMatch = newLiteralMatcherTokens(norm)
	return nil
}

// tokenField decodes a special-token field: null, "text" or {"content": "text"}.
func tokenField(cfg map[string]json.RawMessage, name string) (string, error) {
	raw, ok := cfg[name]
	if !ok || isNull(raw) {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, nil
	}
	var obj struct {
		Content *string `json:"content"`
	}
	if err := json.Unmarshal(raw, &obj); err != nil || obj.Content == nil {
		return "", fmt.Errorf("%s: want a string or {\"content\": ...}, got %s", name, compact(raw))
	}
	return *obj.Content, nil
}

func (h *HF) parseConfig(data []byte) error {
	var cfg map[string]json.RawMessage
	if err := json.Unmarshal(data, &cfg); err != nil {
		return fmt.Errorf("invalid JSON: %w", err)
	}
	if raw, ok := cfg["added_tokens_decoder"]; ok && !isNull(raw) {
		var dec map[string]hfAddedToken
		if err := json.Unmarshal(raw, &dec); err != nil {
			return fmt.Errorf("added_tokens_decoder: %w", err)
		}
		keys := make([]string, 0, len(dec))
		for k := range dec {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			id, err := strconv.Atoi(k)
			if err != nil || id < 0 {
				return fmt.Errorf("added_tokens_decoder: key %q is not a token id", k)
			}
			t := dec[k]
			if id < len(h.valid) && h.valid[id] && h.idToken[id] != t.Content {
				return fmt.Errorf("added_tokens_decoder[%s]: %q, but %s has %q", k, t.Content, TokenizerFile, h.idToken[id])
			}
			if _, ok := h.added[t.Content]; !ok {
				return fmt.Errorf("added_tokens_decoder[%s]: %q is not an added token of %s", k, t.Content, TokenizerFile)
			}
		}
	}
	var err error
	if h.bosToken, err = tokenField(cfg, "bos_token"); err != nil {
		return err
	}
	if h.eosToken, err = tokenField(cfg, "eos_token"); err != nil {
		return err
	}
	if h.padToken, err = tokenField(cfg, "pad_token"); err != nil {
		return err
	}
	for _, f := range []struct{ name, tok string }{{"bos_token", h.bosToken}, {"eos_token", h.eosToken}, {"pad_token", h.padToken}} {
		if f.tok == "" {
			continue
		}
		if _, ok := h.TokenID(f.tok); !ok {
			return fmt.Errorf("%s: %q is not a token", f.name, f.tok)
		}
	}
	if h.eosToken != "" {
		id, _ := h.TokenID(h.eosToken)
		h.eos = append(h.eos, id)
	}
	if h.padToken != "" {
		h.pad, _ = h.TokenID(h.padToken)
	} else if len(h.eos) > 0 {
		h.pad = h.eos[0]
	}
	if raw, ok := cfg["chat_template"]; ok && !isNull(raw) {
		var s string
		if err := json.Unmarshal(raw, &s); err == nil {
			h.chatTemplate = s
		} else {
			var named []struct {
				Name     string `json:"name"`
				Template string `json:"template"`
			}
			if err := json.Unmarshal(raw, &named); err != nil {
				return fmt.Errorf("chat_template: want a string or a list of {name, template}: %w", err)
			}
			for _, n := range named {
				if n.Name == "default" {
					h.chatTemplate = n.Template
				}
			}
			if h.chatTemplate == "" {
				return errors.New("chat_template: list has no \"default\" template")
			}
		}
	}
	return nil
}

func (h *HF) parseGenerationConfig(data []byte) error {
	var g struct {
		EOS json.RawMessage `json:"eos_token_id"`
		Pad *int            `json:"pad_token_id"`
	}
	if err := json.Unmarshal(data, &g); err != nil {
		return fmt.Errorf("invalid JSON: %w", err)
	}
	if isNull(g.EOS) {
		return nil
	}
	var ids []int
	var one int
	if err := json.Unmarshal(g.EOS, &one); err == nil {
		ids = []int{one}
	} else if err := json.Unmarshal(g.EOS, &ids); err != nil {
		return fmt.Errorf("eos_token_id: want an id or a list of ids, got %s", compact(g.EOS))
	}
	for _, id := range ids {
		if id < 0 || id >= len(h.valid) || !h.valid[id] {
			return fmt.Errorf("eos_token_id: %d is not a token id", id)
		}
		dup := false
		for _, e := range h.eos {
			dup = dup || e == id
		}
		if !dup {
			h.eos = append(h.eos, id)
		}
	}
	return nil
}

// Encode tokenizes text as the Hugging Face tokenizer does with
// add_special_tokens=True (which adds nothing for Qwen; Llama-3 hub files
// prepend <|begin_of_text|>): added tokens are cut out first, the rest is
// NFC-normalised, split with the Qwen2 (or Llama-3) pattern, mapped to
// bytes and merged with BPE.
func (h *HF) Encode(text string) []int { return h.EncodeSpecial(text, true) }

// EncodeSpecial is Encode with add_special_tokens as given: false leaves out
// the tokens a TemplateProcessing post-processor adds (e.g. BOS).
func (h *HF) EncodeSpecial(text string, addSpecialTokens bool) []int {
	ids := make([]int, 0, len(text)/3+4+len(h.prefixIDs)+len(h.suffixIDs))
	if addSpecialTokens {
		ids = append(ids, h.prefixIDs...)
	}
	ids = h.encodeText(ids, text)
	if addSpecialTokens {
		ids = append(ids, h.suffixIDs...)
	}
	return ids
}

func (h *HF) encodeText(ids []int, text string) []int {
	for _, seg := range h.rawMatch.split(text) {
		if seg.id >= 0 {
			ids = append(ids, seg.id)
			continue
		}
		s := seg.text
		if h.normalize {
			s = NFC(s)
		}
		for _, seg2 := range h.normMatch.split(s) {
			if seg2.id >= 0 {
				ids = append(ids, seg2.id)
				continue
			}
			splitPattern(seg2.text, h.maxDigits, func(piece string) {
				ids = h.model.encodeWord(ids, piece)
			})
		}
	}
	return ids
}

// Decode turns ids into text with the ByteLevel decoder; special tokens are
// kept, unknown ids skipped, and invalid UTF-8 (an id window that splits a
// character) becomes U+FFFD, as in Hugging Face.
func (h *HF) Decode(ids []int) string { return lossyUTF8(h.appendBytes(nil, ids, false)) }

// DecodeSkipSpecial is Decode with skip_special_tokens=True.
func (h *HF) DecodeSkipSpecial(ids []int) string { return lossyUTF8(h.appendBytes(nil, ids, true)) }

func (h *HF) appendBytes(dst []byte, ids []int, skipSpecial bool) []byte {
	for _, id := range ids {
		if id < 0 || id >= len(h.valid) || !h.valid[id] || (skipSpecial && h.special[id]) {
			continue
		}
		dst = append(dst, h.idBytes[id]...)
	}
	return dst
}

// TokenBytes returns the bytes id decodes to; ok is false for unknown ids.
func (h *HF) TokenBytes(id int) ([]byte, bool) {
	if id < 0 || id >= len(h.valid) || !h.valid[id] {
		return nil, false
	}
	return h.idBytes[id], true
}

// VocabSize is the largest id plus one (151665 for Qwen2.5); a model's
// embedding table may be larger.
func (h *HF) VocabSize() int { return len(h.idToken) }

// TokenID returns the id of an added token or of a vocab token written as
// in tokenizer.json (byte-level form, e.g. "Ġthe"); failing both, the id of
// the token whose raw bytes are tok (e.g. " the").
func (h *HF) TokenID(tok string) (int, bool) {
	if id, ok := h.added[tok]; ok {
		return id, true
	}
	if id, ok := h.vocab[tok]; ok {
		return id, true
	}
	if id, ok := h.model.vocab[tok]; ok {
		return int(id), true
	}
	return 0, false
}

// IDToken returns the token string of id as stored in tokenizer.json.
func (h *HF) IDToken(id int) (string, bool) {
	if id < 0 || id >= len(h.valid) || !h.valid[id] {
		return "", false
	}
	return h.idToken[id], true
}

// IsSpecial reports whether id is a special added token.
func (h *HF) IsSpecial(id int) bool { return id >= 0 && id < len(h.special) && h.special[id] }

// EOSIDs returns the eos_token id followed by any further ids of
// generation_config.json's eos_token_id.
func (h *HF) EOSIDs() []int { return append([]int(nil), h.eos...) }

// PadID is the pad_token id, or the first EOS id when there is no pad
// token, or -1.
func (h *HF) PadID() int { return h.pad }

// BOSToken, EOSToken and PadToken are the special-token strings of
// tokenizer_config.json ("" when absent).
func (h *HF) BOSToken() string { return h.bosToken }

// EOSToken is the eos_token of tokenizer_config.json.
func (h *HF) EOSToken() string { return h.eosToken }

// PadToken is the pad_token of tokenizer_config.json.
func (h *HF) PadToken() string { return h.padToken }

// ChatTemplate is the Jinja source of the chat template ("" when none).
func (h *HF) ChatTemplate() string { return h.chatTemplate }
