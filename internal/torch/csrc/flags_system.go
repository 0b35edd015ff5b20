//go:build !torchpc && !torchshared

package csrc

/*
#cgo LDFLAGS: -ltorch -ltorch_cpu -lc10 -fopenmp
*/
import "C"
