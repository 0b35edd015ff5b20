package ragen

import (
	"fmt"
	"regexp"
	"strings"

	"ragen/env"
	"ragen/internal/pystr"
	"ragen/llm/tokenizer"
)

// Literal pieces of upstream's prompts (spec §3).
const (
	systemPrefix    = "You're a helpful assistant. "
	invalidWarning  = "No valid action provided previously. Environment state remains the same. Please try again.\n"
	formatThink     = "<think> [Your thoughts] </think> <answer> [your answer] </answer>"
	formatAnswer    = "<answer> [your answer] </answer>"
	coordStatesText = "\nStates are provided as coordinate lists using zero-based indexing with the format (row, col) for each entity type: Walls, Targets, Boxes, Boxes on target, Player, and Player on target when applicable."
)

// specialStrings are removed from think and answer text, in this order.
var specialStrings = []string{"<think>", "</think>", "<answer>", "</answer>", "<|im_start|>", "<|im_end|>"}

// pySpace is Python's str \s / isspace set.
const pySpace = `\t\n\x0b\x0c\r \x1c-\x1f\x{85}\p{Z}`

var (
	thinkPattern  = regexp.MustCompile(`(?s)<think>(.*?)</think>[` + pySpace + `]*<answer>(.*?)</answer>`)
	answerPattern = regexp.MustCompile(`(?s)<answer>(.*?)</answer>`)
)

// ContextManager turns env histories into chat prompts, parses model output
// into actions and builds training sequences (spec §3). One manager serves
// one mode (train or val) because the system prompts depend on the env set.
type ContextManager struct {
	cfg       Config
	tok       tokenizer.Tokenizer
	mode      env.Mode
	system    map[string]string // tag → system message
	maxTokens map[string]int    // tag → "Max response length" value
}

// NewContextManager builds the system prompt of every tag of the mode's env
// set (spec §3.1).
func NewContextManager(cfg Config, mode env.Mode, tok tokenizer.Tokenizer, p EnvProvider) (*ContextManager, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if tok == nil {
		return nil, fmt.Errorf("ragen: context manager: nil tokenizer")
	}
	c := &ContextManager{cfg: cfg, tok: tok, mode: mode, system: map[string]string{}, maxTokens: map[string]int{}}
	for _, tag := range cfg.envSet(mode).EnvConfigs.Tags {
		spec := cfg.CustomEnvs[tag]
		info, err := p.PromptInfo(tag, spec)
		if err != nil {
			return nil, fmt.Errorf("ragen: context manager: tag %s: %w", tag, err)
		}
		if cfg.PromptFromEnvConfig {
			if info, err = envConfigPromptInfo(p, tag, spec, info); err != nil {
				return nil, fmt.Errorf("ragen: context manager: tag %s: %w", tag, err)
			}
		}
		c.system[tag] = SystemPrompt(spec, info, cfg.AgentProxy.ActionSep)
		mt := spec.MaxTokens
		if mt == 0 {
			mt = cfg.Rollout.ResponseLength
		}
		c.maxTokens[tag] = mt
	}
	return c, nil
}

// SystemMessage returns a tag's system message ("" for a tag of another
// mode's env set).
func (c *ContextManager) SystemMessage(tag string) string { return c.system[tag] }

// envConfigPromptInfo is the prompt facts of the tag's env_config
// (ragen_prompt_from_env_config): an env of the tag is built and, if it
// reports its facts (env.PromptFacter), they replace info. Env types with
// no vocabulary or action names by default (bandit, the service envs) are
// not built.
func envConfigPromptInfo(p EnvProvider, tag string, spec EnvSpec, info PromptInfo) (PromptInfo, error) {
	if len(info.GridVocab) == 0 && len(info.ActionNames) == 0 {
		return info, nil
	}
	e, err := p.NewEnv(tag, spec)
	if err != nil {
		return info, fmt.Errorf("ragen_prompt_from_env_config: building an env for its prompt: %w", err)
	}
	defer e.Close()
	f, ok := e.(env.PromptFacter)
	if !ok {
		return info, nil
	}
	return promptInfoOf(f.PromptFacts()), nil
}

// promptInfoOf converts an env type's prompt facts.
func promptInfoOf(d env.PromptDefaults) PromptInfo {
	info := PromptInfo{ObservationFormat: d.ObservationFormat, ActionNames: d.ActionNames}
	for _, v := range d.GridVocab {
		info.GridVocab = append(info.GridVocab, VocabEntry{Symbol: v[0], Meaning: v[1]})
	}
	return info
}

// SystemPrompt renders the system message of a tag (spec §3.1).
func SystemPrompt(spec EnvSpec, info PromptInfo, actionSep string) string {
	var b strings.Builder
	b.WriteString(systemPrefix)
	b.WriteString(spec.EnvInstruction)
	format := info.ObservationFormat
	if format == "" {
		format = "grid"
	}
	if format == "grid" && len(info.GridVocab) > 0 {
		b.WriteString("\nThe meaning of each symbol in the state is:\n")
		for i, v := range info.GridVocab {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(v.Symbol + ": " + v.Meaning)
		}
	}
	if format == "coord" {
		b.WriteString(coordStatesText)
	}
	if len(info.ActionNames) > 0 {
		b.WriteString("\nYour available actions are:\n")
		b.WriteString(strings.Join(info.ActionNames, ", "))
		fmt.Fprintf(&b, "\nYou can make up to %d actions, separated by the action separator \" %s \"\n", spec.MaxActionsPerTraj, actionSep)
	}
	return b.String()
}

func (c *ContextManager) formatPrompt() string {
	if c.cfg.AgentProxy.EnableThink {
		return formatThink
	}
	return formatAnswer
}

// forcedPrefix is appended to inference prompts and prepended to generations.
func (c *ContextManager) forcedPrefix() string {
	if c.cfg.AgentProxy.EnableThink {
		return "<think>"
	}
	return "<answer>"
}

func (c *ContextManager) lengthPrompt(tag string) string {
	return fmt.Sprintf("Max response length: %d words (tokens).", c.maxTokens[tag])
}

// turnBlock is the per-turn text of the multi-turn modes (spec §3.2).
func (c *ContextManager) turnBlock(tag string, n int, h HistoryEntry, warn bool) string {
	w := ""
	if warn && h.ManagerInvalidAction {
		w = invalidWarning
	}
	return fmt.Sprintf("\nTurn %d:\nState:\n%s\n%sYou have %d actions left. Always output: %s with no extra text. Strictly follow this format. %s\n",
		n, h.State, w, h.ActionsLeft, c.formatPrompt(), c.lengthPrompt(tag))
}

func rewardMessage(r Reward) string { return "Reward:\n" + r.String() + "\n" }

// msgList is a message list with, per message, the length of a leading
// "Reward:…" line (so truncation can move it out).
type msgList struct {
	msgs   []tokenizer.Message
	reward []int
}

func (l *msgList) add(role, content string, rewardLen int) {
	l.msgs = append(l.msgs, tokenizer.Message{Role: role, Content: content})
	l.reward = append(l.reward, rewardLen)
}

func (l *msgList) appendLast(s string) { l.msgs[len(l.msgs)-1].Content += s }

// multiTurn builds [system, user(turn…), assistant, user(Reward…+turn), …]
// from hist numbered from off+1. rewardLast: add the reward message after
// the last entry too.
func (c *ContextManager) multiTurn(tag string, hist []HistoryEntry, off int, warn, rewardLast bool) *msgList {
	l := &msgList{}
	l.add("system", c.system[tag], 0)
	l.add("user", "", 0)
	for i, h := range hist {
		l.appendLast(c.turnBlock(tag, i+1+off, h, warn))
		if h.Acted {
			l.add("assistant", h.LLMResponse, 0)
			if rewardLast || i < len(hist)-1 {
				rm := rewardMessage(h.Reward)
				l.add("user", rm, len(rm))
			}
		}
	}
	return l
}

// window returns k (max_context_window) and whether it limits: a
// negative k is unlimited; 0 limits to no earlier turns (spec §3.3).
func (c *ContextManager) window() (int, bool) {
	k := c.cfg.AgentProxy.MaxContextWindow
	return k, k >= 0
}

// memoryContent is SimpleMemory's single-turn user message (spec §3.6):
// previous turns [s, t) and the current entry t, turn numbers offset by o.
func (c *ContextManager) memoryContent(tag string, hist []HistoryEntry, s, t, o int, warn bool) string {
	if f, ok := env.MemoryFor(c.cfg.CustomEnvs[tag].EnvType); ok {
		return f(c.memoryInput(tag, hist, s, t, o, warn))
	}
	var b strings.Builder
	if s < t {
		fmt.Fprintf(&b, "Summary: %d step(s) completed so far. Showing the last %d turn(s) with state/action/reward details. Recent turns:\n---\n", t+o, t-s)
		for h := s; h < t; h++ {
			e := hist[h]
			n := h + 1 + o
			fmt.Fprintf(&b, "Turn %d State:\n%s\nTurn %d Action: %s\n", n, e.State, n, e.LLMResponse)
			if e.Acted {
				fmt.Fprintf(&b, "Turn %d Reward: %s\n", n, e.Reward)
			}
			b.WriteString("---\n")
		}
	}
	if b.Len() > 0 {
		b.WriteString("\n")
	}
	cur := hist[t]
	if s < t {
		b.WriteString("Current Turn ")
	}
	w := ""
	if warn && cur.ManagerInvalidAction {
		w = invalidWarning
	}
	fmt.Fprintf(&b, "(Turn %d):\nState:\n%s\n%sYou have %d actions left. Always output: %s with no extra text. Strictly follow this format. %s\n",
		t+1+o, cur.State, w, cur.ActionsLeft, c.formatPrompt(), c.lengthPrompt(tag))
	return b.String()
}

// memoryInput is what a registered env memory (env.RegisterMemory) gets
// for entry t with the window [s, t).
func (c *ContextManager) memoryInput(tag string, hist []HistoryEntry, s, t, o int, warn bool) env.MemoryInput {
	in := env.MemoryInput{FirstState: hist[0].State, Completed: t, Offset: o, State: hist[t].State,
		ActionsLeft: hist[t].ActionsLeft, Invalid: warn && hist[t].ManagerInvalidAction,
		Format: c.formatPrompt(), Length: c.lengthPrompt(tag)}
	for h := s; h < t; h++ {
		e := hist[h]
		answer := e.LLMResponse
		if m := answerPattern.FindStringSubmatch(e.LLMResponse); m != nil {
			answer = strings.TrimSpace(m[1])
		}
		in.History = append(in.History, env.MemoryTurn{State: e.State, Answer: answer, Response: e.LLMResponse,
			Reward: e.Reward.String(), Acted: e.Acted})
	}
	return in
}

// singleTurn builds [system, user(memory)] for entry t, raising the window
// start while the rendered prompt is longer than max_model_len.
func (c *ContextManager) singleTurn(tag string, hist []HistoryEntry, t, o int, warn bool, reply *string) ([]tokenizer.Message, error) {
	s := 0
	if k, ok := c.window(); ok {
		s = max(0, t-k+1) // t+1 for k = 0: no earlier turns
	}
	for {
		msgs := c.withReply([]tokenizer.Message{{Role: "system", Content: c.system[tag]}, {Role: "user", Content: c.memoryContent(tag, hist, s, t, o, warn)}}, reply)
		if s >= t {
			return msgs, nil
		}
		// what is counted is what is used: an inference prompt with its
		// generation prompt and forced prefix, a training sample with its
		// reply and no generation prompt (upstream's fitting)
		var n int
		var err error
		if reply == nil {
			n, err = c.countText(msgs, true, c.forcedPrefix())
		} else {
			n, err = c.countTokens(msgs, false)
		}
		if err != nil {
			return nil, err
		}
		if n <= c.cfg.Rollout.MaxModelLen {
			return msgs, nil
		}
		s++
	}
}

func (c *ContextManager) withReply(msgs []tokenizer.Message, reply *string) []tokenizer.Message {
	if reply != nil {
		msgs = append(msgs, tokenizer.Message{Role: "assistant", Content: *reply})
	}
	return msgs
}

func (c *ContextManager) countTokens(msgs []tokenizer.Message, genPrompt bool) (int, error) {
	return c.countText(msgs, genPrompt, "")
}

// countText is the token count of the templated messages followed by
// suffix, without the tokenizer's own special tokens (upstream counts
// with add_special_tokens=False: Llama-3's template already writes its
// BOS).
func (c *ContextManager) countText(msgs []tokenizer.Message, genPrompt bool, suffix string) (int, error) {
	text, err := c.tok.ApplyChatTemplate(msgs, genPrompt)
	if err != nil {
		return 0, fmt.Errorf("ragen: chat template: %w", err)
	}
	text += suffix
	if e, ok := c.tok.(interface{ EncodeSpecial(string, bool) []int }); ok {
		return len(e.EncodeSpecial(text, false)), nil
	}
	return len(c.tok.Encode(text)), nil
}

// truncate applies the max_model_len rule of spec §3.7 and returns the
// number of leading [user, assistant] turns removed (sane mode).
func (c *ContextManager) truncate(l *msgList, genPrompt bool) (int, error) {
	dropped := 0
	for {
		n, err := c.countTokens(l.msgs, genPrompt)
		if err != nil {
			return 0, err
		}
		// upstream stops when at most 2 messages after the system message
		// are left
		if n <= c.cfg.Rollout.MaxModelLen || len(l.msgs) <= 3 {
			return dropped, nil
		}
		rest := l.msgs[1:]
		drop := 0
		if c.cfg.Compat.Truncation {
			switch {
			case len(rest) >= 3 && rest[0].Role == "user" && rest[1].Role == "assistant" && rest[2].Role == "user" && strings.Contains(rest[2].Content, "Reward"):
				drop = 3
			case len(rest) >= 2 && rest[0].Role == "user" && rest[1].Role == "assistant":
				drop = 2
			default:
				drop = 1
			}
		} else {
			// Drop [user_i, assistant_i] and move turn i's reward line out of
			// the next user message, keeping the next state and role parity.
			if len(rest) < 3 || rest[0].Role != "user" || rest[1].Role != "assistant" || rest[2].Role != "user" {
				return dropped, nil
			}
			next := rest[2]
			next.Content = next.Content[l.reward[3]:]
			l.msgs[3] = next
			l.reward[3] = 0
			drop = 2
		}
		l.msgs = append(l.msgs[:1], l.msgs[1+drop:]...)
		l.reward = append(l.reward[:1], l.reward[1+drop:]...)
		dropped++
	}
}

// Prompt is one env's inference prompt.
type Prompt struct {
	EnvID    int
	GroupID  int
	Tag      string
	Turn     int                 // 0-based turn index (entries acted on so far)
	Messages []tokenizer.Message // the chat, for API models
	Text     string              // chat template + generation prompt + forced prefix
	IDs      []int               // tokenizer.Encode(Text)
}

// Prompts builds the inference prompt of every given env (spec §3.3).
func (c *ContextManager) Prompts(outs []*EnvOutput) ([]Prompt, error) {
	ps := make([]Prompt, len(outs))
	for i, o := range outs {
		p, err := c.prompt(o)
		if err != nil {
			return nil, fmt.Errorf("ragen: prompt for env %d: %w", o.EnvID, err)
		}
		ps[i] = p
	}
	return ps, nil
}

func (c *ContextManager) prompt(o *EnvOutput) (Prompt, error) {
	if len(o.History) == 0 {
		return Prompt{}, fmt.Errorf("empty history")
	}
	hist, off := o.History, 0
	k, _ := c.window()
	mode := c.cfg.AgentProxy.ContextWindowMode
	if mode != ModeFull && k > 0 && len(hist) > k {
		off = len(hist) - k
		hist = hist[off:]
	}
	var msgs []tokenizer.Message
	if mode == ModeSingleTurn {
		var err error
		msgs, err = c.singleTurn(o.Tag, hist, len(hist)-1, off, true, nil)
		if err != nil {
			return Prompt{}, err
		}
	} else {
		l := c.multiTurn(o.Tag, hist, off, true, true)
		if _, err := c.truncate(l, true); err != nil {
			return Prompt{}, err
		}
		msgs = l.msgs
	}
	text, err := c.tok.ApplyChatTemplate(msgs, true)
	if err != nil {
		return Prompt{}, fmt.Errorf("ragen: chat template: %w", err)
	}
	text += c.forcedPrefix()
	turn := 0
	for _, h := range o.History {
		if h.Acted {
			turn++
		}
	}
	return Prompt{EnvID: o.EnvID, GroupID: o.GroupID, Tag: o.Tag, Turn: turn, Messages: msgs, Text: text, IDs: c.tok.Encode(text)}, nil
}

// ParseResponse parses a generation (spec §3.4). generated is the decoded
// model output without the forced prefix; the prefix is prepended here.
// No match gives the raw text and no actions (→ format penalty).
func (c *ContextManager) ParseResponse(generated string) EnvInput {
	raw := c.forcedPrefix() + generated
	resp, actions := parseResponse(raw, c.cfg.AgentProxy.EnableThink, c.cfg.AgentProxy.ActionSep, c.cfg.AgentProxy.MaxActionsPerTurn)
	return EnvInput{LLMRawResponse: raw, LLMResponse: resp, Actions: actions}
}

// parseResponse is the pure parser behind ParseResponse.
func parseResponse(raw string, think bool, sep string, maxActions int) (string, []string) {
	var thinkText, answer string
	if think {
		m := thinkPattern.FindStringSubmatch(raw)
		if m == nil {
			return raw, nil
		}
		thinkText, answer = m[1], m[2]
	} else {
		m := answerPattern.FindStringSubmatch(raw)
		if m == nil {
			return raw, nil
		}
		answer = m[1]
	}
	for _, s := range specialStrings {
		answer = pystr.Strip(strings.ReplaceAll(answer, s, ""))
		thinkText = pystr.Strip(strings.ReplaceAll(thinkText, s, ""))
	}
	var actions []string
	if sep != "" {
		for _, a := range strings.Split(answer, sep) {
			if a = pystr.Strip(a); a != "" {
				actions = append(actions, a)
			}
		}
	}
	if maxActions >= 0 && len(actions) > maxActions {
		actions = actions[:maxActions]
		answer = strings.Join(actions, " "+sep+" ")
	}
	if think {
		return "<think>" + thinkText + "</think><answer>" + answer + "</answer>", actions
	}
	return "<answer>" + answer + "</answer>", actions
}
