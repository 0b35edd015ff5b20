package alfworld

import (
	"fmt"
	"strings"
)

// Turn is one earlier turn of an episode: the state shown and the answer
// (the action text) given.
type Turn struct {
	State  string
	Answer string
}

// MemoryInput is what the single-turn ALFWorld memory needs.
type MemoryInput struct {
	FirstState  string // the episode's first observation (holds "Your task is to: ...")
	History     []Turn // the window of previous turns shown, oldest first
	Completed   int    // turns taken before this one
	Offset      int    // turn offset o (numbering starts at 1+o)
	State       string // the current observation
	ActionsLeft int
	Invalid     bool   // the previous answer had no valid action
	Format      string // upstream's FORMAT string
	Length      string // upstream's LENGTH sentence
}

const welcome = "-= Welcome to TextWorld, ALFRED! =-"

// CleanObservation removes the boilerplate of an ALFWorld render: the
// welcome banner and the "Admissible actions" list.
func CleanObservation(s string) string {
	if i := strings.Index(s, "\n\nAdmissible actions: ["); i >= 0 {
		s = s[:i]
	}
	s = strings.Replace(s, welcome, "", 1)
	return strings.TrimSpace(s)
}

// Admissible returns the admissible actions listed in an ALFWorld render.
func Admissible(s string) []string {
	i := strings.LastIndex(s, "Admissible actions: [")
	if i < 0 || !strings.HasSuffix(s, "]") {
		return nil
	}
	body := s[i+len("Admissible actions: [") : len(s)-1]
	if body == "" {
		return nil
	}
	return strings.Split(body, ", ")
}

// Task returns the text after "Your task is to: " on its line, without a
// final period.
func Task(first string) string {
	_, after, ok := strings.Cut(first, "Your task is to: ")
	if !ok {
		return ""
	}
	after, _, _ = strings.Cut(after, "\n")
	return strings.TrimSuffix(strings.TrimSpace(after), ".")
}

// Memory renders upstream's ALFWorld single-turn memory (verl-agent
// style, context-and-rollout.md §3.6), lines joined by "\n".
func Memory(in MemoryInput) string {
	lines := []string{fmt.Sprintf("Your task is to: %s.", Task(in.FirstState))}
	if in.Completed > 0 {
		lines = append(lines, fmt.Sprintf("Prior to this step, you have already taken %d step(s).", in.Completed))
	}
	if len(in.History) > 0 {
		var b strings.Builder
		fmt.Fprintf(&b, "Below are the most recent %d observations and the corresponding actions you took:", len(in.History))
		first := in.Completed - len(in.History)
		for j, h := range in.History {
			obs := CleanObservation(h.State)
			if r := []rune(obs); len(r) > 200 {
				obs = string(r[:200])
			}
			n := first + j + 1 + in.Offset
			fmt.Fprintf(&b, " [Observation %d: '%s', Action %d: '%s']", n, obs, n, h.Answer)
		}
		lines = append(lines, b.String())
	}
	lines = append(lines,
		fmt.Sprintf("You are now at step %d and your current observation is: %s", in.Completed+1+in.Offset, CleanObservation(in.State)),
		fmt.Sprintf("Your admissible actions of the current situation are: [%s]", strings.Join(Admissible(in.State), ", ")))
	if in.Invalid {
		lines = append(lines, "No valid action provided previously. Environment state remains the same.")
	}
	lines = append(lines, fmt.Sprintf("Now it's your turn to take an action. You have %d actions left. Always output: %s with no extra text. %s", in.ActionsLeft, in.Format, in.Length))
	return strings.Join(lines, "\n")
}
