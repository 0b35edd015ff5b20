package llm

import (
	"encoding/json"
	"fmt"
)

// policyState is what a checkpoint needs to continue a policy's sampling
// stream exactly: the number of Generate calls made so far.
type policyState struct {
	Calls uint64 `json:"calls"`
}

// MarshalState returns the policy's sampling position (starpo.Stateful).
func (p *policy) MarshalState() ([]byte, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return json.Marshal(policyState{Calls: p.n})
}

// UnmarshalState restores a position written by MarshalState.
func (p *policy) UnmarshalState(b []byte) error {
	var st policyState
	if err := json.Unmarshal(b, &st); err != nil {
		return fmt.Errorf("llm: policy state: %w", err)
	}
	p.mu.Lock()
	p.n = st.Calls
	p.mu.Unlock()
	return nil
}
