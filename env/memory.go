package env

import (
	"fmt"
	"sync"
)

// Single-turn memories. In upstream's single_turn context mode every prompt
// is [system, user(memory)], where the memory summarises the earlier turns
// (context-and-rollout.md §3.6). The default is SimpleMemory, built by the
// context manager; an env type whose upstream uses another memory (ALFWorld:
// verl-agent's) registers it here.

// MemoryTurn is one earlier turn shown in the memory.
type MemoryTurn struct {
	State    string // the observation of that turn
	Answer   string // the text inside <answer>…</answer> of the reply
	Response string // the cleaned reply (<think>…</think><answer>…</answer>)
	Reward   string // the turn's reward as the prompt prints it
	Acted    bool   // the turn executed actions
}

// MemoryInput is what a memory renderer gets for the current turn.
type MemoryInput struct {
	FirstState  string       // the episode's first observation
	History     []MemoryTurn // the window of earlier turns shown, oldest first
	Completed   int          // turns taken before the current one (t)
	Offset      int          // turn numbering offset o (turns are numbered from 1+o)
	State       string       // the current observation
	ActionsLeft int
	Invalid     bool   // the previous reply had no valid action (warnings on)
	Format      string // upstream's FORMAT string
	Length      string // upstream's LENGTH sentence
}

// MemoryFunc renders the user message of a single-turn prompt.
type MemoryFunc func(MemoryInput) string

var (
	memMu    sync.RWMutex
	memories = map[string]MemoryFunc{}
)

// RegisterMemory sets the single-turn memory of an env type. Registering a
// type twice or a nil function is a programming mistake and panics.
func RegisterMemory(envType string, f MemoryFunc) {
	memMu.Lock()
	defer memMu.Unlock()
	if f == nil {
		panic("env: RegisterMemory with a nil function")
	}
	if _, ok := memories[envType]; ok {
		panic(fmt.Sprintf("env: memory of %q registered twice", envType))
	}
	memories[envType] = f
}

// MemoryFor returns the registered memory of an env type (false: the
// context manager's default, upstream's SimpleMemory).
func MemoryFor(envType string) (MemoryFunc, bool) {
	memMu.RLock()
	defer memMu.RUnlock()
	f, ok := memories[envType]
	return f, ok
}
