package collapse

import (
	"encoding/json"
	"fmt"
	"math"
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

// jsonFloat is a float64 whose JSON form is a number when finite and the
// string "NaN", "+Inf" or "-Inf" otherwise (encoding/json rejects
// non-finite numbers, and a NaN marginal std must not make a checkpoint
// unwritable).
type jsonFloat float64

func (f jsonFloat) MarshalJSON() ([]byte, error) {
	v := float64(f)
	switch {
	case math.IsNaN(v):
		return []byte(`"NaN"`), nil
	case math.IsInf(v, 1):
		return []byte(`"+Inf"`), nil
	case math.IsInf(v, -1):
		return []byte(`"-Inf"`), nil
	}
	return json.Marshal(v)
}

func (f *jsonFloat) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		switch s {
		case "NaN":
			*f = jsonFloat(math.NaN())
		case "+Inf":
			*f = jsonFloat(math.Inf(1))
		case "-Inf":
			*f = jsonFloat(math.Inf(-1))
		default:
			return fmt.Errorf("collapse: bad number %q in detector state", s)
		}
		return nil
	}
	var v float64
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*f = jsonFloat(v)
	return nil
}

type emaJSON struct {
	Std, StdSeq jsonFloat
	Set         bool
}

// MarshalJSON writes the EMA with non-finite values as strings.
func (e EMA) MarshalJSON() ([]byte, error) {
	return json.Marshal(emaJSON{jsonFloat(e.Std), jsonFloat(e.StdSeq), e.Set})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (e *EMA) UnmarshalJSON(b []byte) error {
	var j emaJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*e = EMA{Std: float64(j.Std), StdSeq: float64(j.StdSeq), Set: j.Set}
	return nil
}
