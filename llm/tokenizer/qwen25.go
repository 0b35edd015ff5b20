package tokenizer

import (
	_ "embed"
	"errors"
	"strings"
)

// Qwen25DefaultSystem is the system prompt the Qwen2.5 chat template inserts
// when the first message is not a system message.
const Qwen25DefaultSystem = "You are Qwen, created by Alibaba Cloud. You are a helpful assistant."

// Qwen25ChatTemplate is the chat template of the Qwen2.5-Instruct models, as
// published in their tokenizer_config.json.
//
//go:embed testdata/qwen25_chat_template.jinja
var Qwen25ChatTemplate string

// ErrNoMessages is returned when a chat template is applied to no messages.
var ErrNoMessages = errors.New("chat template: no messages")

// RenderQwen25 renders msgs as the Qwen2.5-Instruct chat template does when no
// tools are given: a system turn (the given one if msgs[0] is a system
// message, else [Qwen25DefaultSystem]); every user, assistant and later
// system message as "<|im_start|>{role}\n{content}<|im_end|>\n"; runs of
// "tool" messages as one user turn of <tool_response> blocks; other roles
// are dropped. addGenerationPrompt appends "<|im_start|>assistant\n".
func RenderQwen25(msgs []Message, addGenerationPrompt bool) (string, error) {
	if len(msgs) == 0 {
		return "", ErrNoMessages
	}
	var sb strings.Builder
	n := 64
	for _, m := range msgs {
		n += len(m.Content) + len(m.Role) + 24
	}
	sb.Grow(n)
	sb.WriteString("<|im_start|>system\n")
	if msgs[0].Role == "system" {
		sb.WriteString(msgs[0].Content)
	} else {
		sb.WriteString(Qwen25DefaultSystem)
	}
	sb.WriteString("<|im_end|>\n")
	for i, m := range msgs {
		switch {
		case m.Role == "user" || m.Role == "assistant" || (m.Role == "system" && i > 0):
			sb.WriteString("<|im_start|>")
			sb.WriteString(m.Role)
			sb.WriteString("\n")
			sb.WriteString(m.Content)
			sb.WriteString("<|im_end|>\n")
		case m.Role == "tool":
			if i == 0 || msgs[i-1].Role != "tool" {
				sb.WriteString("<|im_start|>user")
			}
			sb.WriteString("\n<tool_response>\n")
			sb.WriteString(m.Content)
			sb.WriteString("\n</tool_response>")
			if i == len(msgs)-1 || msgs[i+1].Role != "tool" {
				sb.WriteString("<|im_end|>\n")
			}
		}
	}
	if addGenerationPrompt {
		sb.WriteString("<|im_start|>assistant\n")
	}
	return sb.String(), nil
}
