//go:build torchshared

package csrc

// With the torchshared tag the shim is not compiled into the binary: it links
// libragen_torch.so (built from shim.cc by scripts/build-shim.sh) found via
// CGO_LDFLAGS=-L<dir> at build time and LD_LIBRARY_PATH or $ORIGIN at run time.

/*
#cgo LDFLAGS: -lragen_torch -Wl,-rpath,$ORIGIN -Wl,-rpath,$ORIGIN/lib
*/
import "C"
