package tokenizer

import (
	"errors"
	"fmt"
	"reflect"
)

// ChatOptions are the settings of one chat-template rendering.
type ChatOptions struct {
	// AddGenerationPrompt appends the assistant header.
	AddGenerationPrompt bool
	// Tools are tool schemas (JSON-like values, e.g. from JSONValue); nil
	// renders with tools=None as transformers does without tools.
	Tools []any
	// Vars are extra template variables, e.g. "enable_thinking": false for
	// Qwen3. They override the defaults.
	Vars map[string]any
}

// ErrNoChatTemplate is returned when tokenizer_config.json has no template.
var ErrNoChatTemplate = errors.New("tokenizer: tokenizer_config.json has no chat_template")

func (h *HF) template() (*Template, error) {
	h.tmplOnce.Do(func() {
		if h.chatTemplate == "" {
			h.tmplErr = ErrNoChatTemplate
			return
		}
		h.tmpl, h.tmplErr = ParseTemplate(h.chatTemplate)
	})
	return h.tmpl, h.tmplErr
}

// ApplyChatTemplate renders msgs with the chat template of
// tokenizer_config.json, as transformers' apply_chat_template(tokenize=False).
func (h *HF) ApplyChatTemplate(msgs []Message, addGenerationPrompt bool) (string, error) {
	return h.RenderChat(msgs, ChatOptions{AddGenerationPrompt: addGenerationPrompt})
}

// RenderChat renders messages, which may be []Message or JSON-like values
// (e.g. from JSONValue, with tool_calls or reasoning_content fields), with
// the model's chat template. The variables are those transformers passes:
// messages, tools, documents (None), add_generation_prompt and the special
// tokens bos_token, eos_token, pad_token when set, then opt.Vars.
func (h *HF) RenderChat(messages any, opt ChatOptions) (string, error) {
	t, err := h.template()
	if err != nil {
		return "", err
	}
	// Jinja2 fails on the HF templates' messages[0] for an empty list;
	// ardanlabs/jinja renders an undefined value instead, so check here.
	if rv := reflect.ValueOf(messages); messages == nil || (rv.Kind() == reflect.Slice && rv.Len() == 0) {
		return "", ErrNoMessages
	}
	vars := map[string]any{
		"messages":              messages,
		"tools":                 nil,
		"documents":             nil,
		"add_generation_prompt": opt.AddGenerationPrompt,
	}
	if opt.Tools != nil {
		vars["tools"] = opt.Tools
	}
	for name, tok := range map[string]string{"bos_token": h.bosToken, "eos_token": h.eosToken, "pad_token": h.padToken} {
		if tok != "" {
			vars[name] = tok
		}
	}
	for k, v := range opt.Vars {
		vars[k] = v
	}
	s, err := t.Render(vars)
	if err != nil {
		return "", fmt.Errorf("tokenizer: %w", err)
	}
	return s, nil
}
