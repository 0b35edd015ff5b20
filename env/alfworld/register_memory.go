package alfworld

import "ragen/env"

// The single-turn prompts of alfworld tags use upstream's ALFWorld memory
// instead of SimpleMemory.
func init() {
	env.RegisterMemory("alfworld", func(in env.MemoryInput) string {
		hist := make([]Turn, len(in.History))
		for i, h := range in.History {
			hist[i] = Turn{State: h.State, Answer: h.Answer}
		}
		return Memory(MemoryInput{FirstState: in.FirstState, History: hist, Completed: in.Completed, Offset: in.Offset,
			State: in.State, ActionsLeft: in.ActionsLeft, Invalid: in.Invalid, Format: in.Format, Length: in.Length})
	})
}
