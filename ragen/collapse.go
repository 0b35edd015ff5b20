package ragen

import (
	"fmt"
	"ragen/internal/pystr"
	"regexp"
	"strings"
)

// CollapseData is what the collapse diagnostics read from a rollout
// (collapse.md §2), one entry per env in Batch.Episodes order.
type CollapseData struct {
	FirstTurnPromptIDs    [][]int   // turn 0's prompt (system + turn-1 block)
	FirstTurnReasoningIDs [][]int   // turn 0's reasoning (empty if none)
	AllTurnsPromptIDs     [][][]int // per env: prompts of the turns with non-empty reasoning
	AllTurnsReasoningIDs  [][][]int // per env: their reasoning
	TurnCounts            []int     // per env: turns with non-empty reasoning
	TurnCountsTotal       []int     // per env: turns with a response
}

var firstThink = regexp.MustCompile(`(?s)<think>(.*?)</think>`)

// reasoningText is the first <think> block of a cleaned response with the
// special strings removed and trimmed ("" if none).
func reasoningText(resp string) string {
	m := firstThink.FindStringSubmatch(resp)
	if m == nil {
		return ""
	}
	z := m[1]
	for _, s := range specialStrings {
		z = strings.ReplaceAll(z, s, "")
	}
	return pystr.Strip(z)
}

// Collapse builds the collapse-diagnostics data of the final env states
// (full mode only; an error in other modes).
func (c *ContextManager) Collapse(outs []*EnvOutput) (*CollapseData, error) {
	if c.cfg.AgentProxy.ContextWindowMode != ModeFull {
		return nil, fmt.Errorf("ragen: collapse data needs context_window_mode full, have %s", c.cfg.AgentProxy.ContextWindowMode)
	}
	d := &CollapseData{}
	for _, o := range outs {
		hist := trainingHistory(o.History)
		var first, firstZ []int
		var prompts, zs [][]int
		total := 0
		for t, h := range hist {
			if !h.Acted {
				continue
			}
			total++
			l := c.multiTurn(o.Tag, hist[:t], 0, false, true)
			l.appendLast(c.turnBlock(o.Tag, t+1, h, false))
			text, err := c.tok.ApplyChatTemplate(l.msgs, true)
			if err != nil {
				return nil, fmt.Errorf("ragen: collapse: env %d: chat template: %w", o.EnvID, err)
			}
			x := c.tok.Encode(text + "<think>")
			zText := reasoningText(h.LLMResponse)
			var z []int
			if zText != "" {
				z = c.tok.Encode(zText)
			}
			if t == 0 {
				first, firstZ = x, z
			}
			if len(z) > 0 {
				prompts = append(prompts, x)
				zs = append(zs, z)
			}
		}
		d.FirstTurnPromptIDs = append(d.FirstTurnPromptIDs, first)
		d.FirstTurnReasoningIDs = append(d.FirstTurnReasoningIDs, firstZ)
		d.AllTurnsPromptIDs = append(d.AllTurnsPromptIDs, prompts)
		d.AllTurnsReasoningIDs = append(d.AllTurnsReasoningIDs, zs)
		d.TurnCounts = append(d.TurnCounts, len(zs))
		d.TurnCountsTotal = append(d.TurnCountsTotal, total)
	}
	return d, nil
}
