package alfworld

import "testing"

func TestMemory(t *testing.T) {
	first := "-= Welcome to TextWorld, ALFRED! =-\n\nYou are in a room.\n\nYour task is to: put a apple in fridge.\n\nAdmissible actions: [look, take apple 1]"
	got := Memory(MemoryInput{
		FirstState:  first,
		History:     []Turn{{State: first, Answer: "take apple 1"}},
		Completed:   1,
		State:       "You pick up the apple 1.\n\nAdmissible actions: [look, put apple 1 in/on fridge 1]",
		ActionsLeft: 49, Invalid: true, Format: "<answer>...</answer>", Length: "Max response length: 512 words (tokens).",
	})
	want := "Your task is to: put a apple in fridge.\n" +
		"Prior to this step, you have already taken 1 step(s).\n" +
		"Below are the most recent 1 observations and the corresponding actions you took: [Observation 1: 'You are in a room.\n\nYour task is to: put a apple in fridge.', Action 1: 'take apple 1']\n" +
		"You are now at step 2 and your current observation is: You pick up the apple 1.\n" +
		"Your admissible actions of the current situation are: [look, put apple 1 in/on fridge 1]\n" +
		"No valid action provided previously. Environment state remains the same.\n" +
		"Now it's your turn to take an action. You have 49 actions left. Always output: <answer>...</answer> with no extra text. Max response length: 512 words (tokens)."
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	got = Memory(MemoryInput{FirstState: first, State: first, ActionsLeft: 50, Format: "F", Length: "L"})
	if got != "Your task is to: put a apple in fridge.\nYou are now at step 1 and your current observation is: You are in a room.\n\nYour task is to: put a apple in fridge.\nYour admissible actions of the current situation are: [look, take apple 1]\nNow it's your turn to take an action. You have 50 actions left. Always output: F with no extra text. L" {
		t.Errorf("first turn: %q", got)
	}
}
