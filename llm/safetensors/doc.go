// Package safetensors reads and writes the safetensors format that Hugging
// Face model folders use (model.safetensors, or shards listed in
// model.safetensors.index.json).
//
// A file is an 8-byte little-endian header length N, N bytes of JSON mapping
// tensor names to {"dtype", "shape", "data_offsets": [begin, end]} (offsets
// relative to the data section that follows the header) plus an optional
// "__metadata__" map of strings, then the raw little-endian tensor bytes.
//
// Parsing checks everything a truncated or corrupt file can get wrong: the
// header length against the file size, the JSON, unknown dtypes, negative or
// overflowing shapes, offsets outside the data section, byte counts that do
// not match shape × element size, and overlapping tensors. Errors name the
// file and the tensor. The package is pure Go; package llm turns the bytes
// into tensors.
package safetensors
