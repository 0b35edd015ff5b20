//go:build torchpc && !torchshared

package csrc

/*
#cgo pkg-config: ragen-torch
*/
import "C"
