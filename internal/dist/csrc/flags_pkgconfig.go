//go:build torchpc

package csrc

/*
#cgo pkg-config: ragen-torch
*/
import "C"
