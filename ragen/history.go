package ragen

import "ragen/env"

// HistoryEntry is one turn of an env's history (spec §1). It is created with
// State and ActionsLeft; after the agent acts the same entry receives the
// actions, reward, info and responses (Acted = true), and a new state-only
// entry is appended. A finished history therefore ends with a state-only
// entry.
type HistoryEntry struct {
	State       string // env.Render() at the start of the turn
	ActionsLeft int    // max_actions_per_traj − actions executed so far

	Acted          bool         // the fields below are set
	Actions        []env.Action // executed actions (after the per-episode cap)
	Reward         Reward       // sum of the executed actions' rewards
	Info           env.Info     // merged info of the executed actions
	LLMResponse    string       // cleaned response
	LLMRawResponse string       // raw response with the forced prefix
	// ManagerInvalidAction marks a state entry reached after a turn with no
	// valid action (the prompt then carries a warning), and the info of the
	// offending turn.
	ManagerInvalidAction bool

	// Metrics holds the raw per-turn info values; only on the last entry
	// after GetRolloutStates.
	Metrics map[string][]float64
}

// EnvOutput is a rollout-cache entry: one env's state as the manager keeps it.
type EnvOutput struct {
	EnvID   int
	GroupID int
	Tag     string
	History []HistoryEntry
	// Penalty is the sum of format penalties of the episode.
	Penalty float64
	// Metrics is filled by GetRolloutStates: per-env metrics keyed
	// "{tag}/{name}".
	Metrics map[string]float64
	// CorrectAnswer is set for envs implementing CorrectAnswerer.
	CorrectAnswer string
}

// EnvInput is what the context manager hands to EnvStateManager.Step for
// one env.
type EnvInput struct {
	EnvID          int
	LLMResponse    string
	LLMRawResponse string
	Actions        []string
}

// CorrectAnswerer is implemented by envs that expose a reference answer
// (MetamathQA); GetRolloutStates stores it on the cache entry.
type CorrectAnswerer interface {
	CorrectAnswer() string
}
