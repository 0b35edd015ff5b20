package collapse

import (
	"encoding/json"
	"fmt"
)

// MarshalState returns the detector's cross-step state (the marginal-std
// EMAs per family) for checkpoints (starpo.Stateful).
func (d *Detector) MarshalState() ([]byte, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return json.Marshal(d.ema)
}

// UnmarshalState restores state written by MarshalState.
func (d *Detector) UnmarshalState(b []byte) error {
	ema := map[string]EMA{}
	if err := json.Unmarshal(b, &ema); err != nil {
		return fmt.Errorf("collapse: detector state: %w", err)
	}
	d.mu.Lock()
	d.ema = ema
	d.mu.Unlock()
	return nil
}
