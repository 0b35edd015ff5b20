package torch

import (
	"errors"
	"fmt"

	"ragen/internal/torch/csrc"
)

// AdamWConfig holds AdamW's hyper-parameters (PyTorch's defaults in
// DefaultAdamW).
type AdamWConfig struct {
	LR          float64 // learning rate (may be changed per step via Step's lr)
	Beta1       float64 // β1, first-moment decay
	Beta2       float64 // β2, second-moment decay
	Eps         float64 // ε added to the denominator
	WeightDecay float64 // decoupled weight decay λ
}

// DefaultAdamW returns torch.optim.AdamW's defaults.
func DefaultAdamW() AdamWConfig {
	return AdamWConfig{LR: 1e-3, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, WeightDecay: 1e-2}
}

// Validate reports every invalid hyper-parameter.
func (c AdamWConfig) Validate() error {
	var errs []error
	if c.LR < 0 {
		errs = append(errs, fmt.Errorf("adamw: lr=%g must be >= 0", c.LR))
	}
	if c.Beta1 < 0 || c.Beta1 >= 1 {
		errs = append(errs, fmt.Errorf("adamw: beta1=%g must be in [0, 1)", c.Beta1))
	}
	if c.Beta2 < 0 || c.Beta2 >= 1 {
		errs = append(errs, fmt.Errorf("adamw: beta2=%g must be in [0, 1)", c.Beta2))
	}
	if c.Eps <= 0 {
		errs = append(errs, fmt.Errorf("adamw: eps=%g must be > 0", c.Eps))
	}
	if c.WeightDecay < 0 {
		errs = append(errs, fmt.Errorf("adamw: weight_decay=%g must be >= 0", c.WeightDecay))
	}
	return errors.Join(errs...)
}

// AdamW is torch.optim.AdamW over a fixed list of parameters. It owns its
// moment tensors; Close frees them (not the parameters).
type AdamW struct {
	Config AdamWConfig
	params []*Tensor
	m, v   []*Tensor
	step   int64
}

// NewAdamW creates zeroed moments shaped like params.
func NewAdamW(params []*Tensor, cfg AdamWConfig) (*AdamW, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	o := &AdamW{Config: cfg, params: params}
	for _, p := range params {
		if !p.Valid() {
			o.Close()
			return nil, ErrFreed
		}
		for _, dst := range []*[]*Tensor{&o.m, &o.v} {
			z, err := Zeros(p.Shape(), p.DType(), p.Device())
			if err != nil {
				o.Close()
				return nil, err
			}
			*dst = append(*dst, z)
		}
	}
	return o, nil
}

// Step applies one update with learning rate lr to every parameter that has
// a gradient. It increments the step count used for bias correction.
func (o *AdamW) Step(lr float64) error {
	ps, err := handles(o.params)
	if err != nil {
		return err
	}
	ms, err := handles(o.m)
	if err != nil {
		return err
	}
	vs, err := handles(o.v)
	if err != nil {
		return err
	}
	o.step++
	c := o.Config
	return check(csrc.AdamWStep(ps, ms, vs, lr, c.Beta1, c.Beta2, c.Eps, c.WeightDecay, o.step))
}

// StepCount is the number of steps taken.
func (o *AdamW) StepCount() int64 { return o.step }

// State returns the moment tensors (owned by o) and the step, for checkpoints.
func (o *AdamW) State() (m, v []*Tensor, step int64) { return o.m, o.v, o.step }

// SetStep restores the step counter (after loading moments with CopyInto).
func (o *AdamW) SetStep(step int64) { o.step = step }

// Close frees the optimizer state.
func (o *AdamW) Close() {
	for _, t := range o.m {
		t.Free()
	}
	for _, t := range o.v {
		t.Free()
	}
	o.m, o.v = nil, nil
}

// SGD is torch.optim.SGD (momentum without dampening, coupled weight decay).
type SGD struct {
	LR, Momentum, WeightDecay float64
	params                    []*Tensor
	buf                       []*Tensor
}

// NewSGD returns an SGD optimizer over params.
func NewSGD(params []*Tensor, lr, momentum, weightDecay float64) (*SGD, error) {
	o := &SGD{LR: lr, Momentum: momentum, WeightDecay: weightDecay, params: params}
	if momentum != 0 {
		for _, p := range params {
			if !p.Valid() {
				o.Close()
				return nil, ErrFreed
			}
			z, err := Zeros(p.Shape(), p.DType(), p.Device())
			if err != nil {
				o.Close()
				return nil, err
			}
			o.buf = append(o.buf, z)
		}
	}
	return o, nil
}

// Step applies one update with learning rate lr.
func (o *SGD) Step(lr float64) error {
	ps, err := handles(o.params)
	if err != nil {
		return err
	}
	var bs []csrc.Tensor
	if o.buf != nil {
		if bs, err = handles(o.buf); err != nil {
			return err
		}
	}
	return check(csrc.SGDStep(ps, bs, lr, o.Momentum, o.WeightDecay))
}

// Close frees the momentum buffers.
func (o *SGD) Close() {
	for _, t := range o.buf {
		t.Free()
	}
	o.buf = nil
}

// ClipGradNorm scales the gradients of params so that their global L2 norm
// is at most maxNorm, as torch.nn.utils.clip_grad_norm_, and returns the norm
// before clipping.
func ClipGradNorm(params []*Tensor, maxNorm float64) (float64, error) {
	ps, err := handles(params)
	if err != nil {
		return 0, err
	}
	n, err := csrc.ClipGradNorm(ps, maxNorm)
	if err != nil {
		return 0, check(err)
	}
	return n, nil
}
