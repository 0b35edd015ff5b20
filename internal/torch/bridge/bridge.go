// Package bridge lets ragen's internal packages reach the C handles behind
// the public torch types, so that package torch's exported API never names
// an internal type. Package torch fills the variables in its init; nothing
// else may assign them.
package bridge

import "ragen/internal/torch/csrc"

var (
	// Handle returns the C handle of a *torch.Tensor (NULL for nil or freed).
	Handle func(t any) csrc.Tensor
	// Put records the result of a C call in a *torch.Scope and returns the
	// new *torch.Tensor (nil, with the scope's sticky error set, on err).
	Put func(s any, h csrc.Tensor, err error) any
	// Fail sets a *torch.Scope's sticky error unless one is already set.
	Fail func(s any, err error)
)
