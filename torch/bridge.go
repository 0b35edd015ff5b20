package torch

import (
	"ragen/internal/torch/bridge"
	"ragen/internal/torch/csrc"
)

// The internal fast paths (internal/torch/fused) reach C handles through
// package bridge; the exported API never names them.
func init() {
	bridge.Handle = func(t any) csrc.Tensor {
		tt, _ := t.(*Tensor)
		return tt.handle()
	}
	bridge.Put = func(s any, h csrc.Tensor, err error) any { return s.(*Scope).put(h, err) }
	bridge.Fail = func(s any, err error) {
		if sc := s.(*Scope); sc.err == nil {
			sc.err = check(err)
		}
	}
}
