package torch

import _ "embed" // the shim header is part of this package's build key

// cmd/go does not hash headers included from another directory, so an edit
// of csrc/shim.h would leave stale cgo stubs here. Embedding the header puts
// its content into this package's cache key.
//
//go:embed csrc/shim.h
var shimHeader string
