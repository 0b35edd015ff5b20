package safetensors

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// MaxHeaderLen bounds the JSON header (100 MB, as the reference
// implementation does).
const MaxHeaderLen = 100 << 20

// ErrFormat is wrapped by every error about malformed file contents.
var ErrFormat = errors.New("malformed safetensors")

// dtypeSizes are the element sizes of the dtypes safetensors defines.
var dtypeSizes = map[string]int{
	"BOOL": 1, "U8": 1, "I8": 1, "F8_E5M2": 1, "F8_E4M3": 1,
	"I16": 2, "U16": 2, "F16": 2, "BF16": 2,
	"I32": 4, "U32": 4, "F32": 4,
	"I64": 8, "U64": 8, "F64": 8,
}

// DTypeSize returns the element size of a safetensors dtype name ("F32",
// "BF16", ...) and whether the name is known.
func DTypeSize(dtype string) (int, bool) {
	n, ok := dtypeSizes[dtype]
	return n, ok
}

// Info describes one tensor of a file.
type Info struct {
	Name  string
	DType string  // safetensors dtype name, e.g. "F32"
	Shape []int64 // empty for a scalar
	Begin int64   // offsets into the data section
	End   int64
}

// Numel is the number of elements.
func (i Info) Numel() int64 {
	n := int64(1)
	for _, d := range i.Shape {
		n *= d
	}
	return n
}

// Header is a parsed header.
type Header struct {
	Metadata map[string]string
	Tensors  []Info // sorted by Begin offset
	// DataStart is the byte offset of the data section in the file (8 + N).
	DataStart int64
}

// Lookup returns the tensor called name.
func (h *Header) Lookup(name string) (Info, bool) {
	for _, t := range h.Tensors {
		if t.Name == name {
			return t, true
		}
	}
	return Info{}, false
}

type rawEntry struct {
	DType       string   `json:"dtype"`
	Shape       []int64  `json:"shape"`
	DataOffsets []uint64 `json:"data_offsets"`
}

// ParseHeader parses the header at the start of a file of fileSize bytes;
// prefix must hold at least the first 8 + N bytes (the whole file is fine).
// name is used in error messages.
func ParseHeader(name string, prefix []byte, fileSize int64) (*Header, error) {
	fail := func(format string, args ...any) error {
		return fmt.Errorf("safetensors: %s: %w: %s", name, ErrFormat, fmt.Sprintf(format, args...))
	}
	if fileSize < 8 || len(prefix) < 8 {
		return nil, fail("file is %d bytes, too short for the 8-byte header length", fileSize)
	}
	n := binary.LittleEndian.Uint64(prefix[:8])
	if n > MaxHeaderLen {
		return nil, fail("header length %d exceeds the %d-byte limit", n, MaxHeaderLen)
	}
	if int64(n) > fileSize-8 {
		return nil, fail("header length %d exceeds the %d bytes after the length field (truncated file?)", n, fileSize-8)
	}
	if uint64(len(prefix)-8) < n {
		return nil, fail("need %d header bytes, have %d", n, len(prefix)-8)
	}
	js := prefix[8 : 8+n]
	if len(bytes.TrimSpace(js)) == 0 || js[0] != '{' {
		return nil, fail("header does not start with a JSON object")
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(js, &raw); err != nil {
		return nil, fail("header JSON: %v", err)
	}
	h := &Header{DataStart: 8 + int64(n)}
	dataLen := fileSize - h.DataStart
	for key, msg := range raw {
		if key == "__metadata__" {
			if err := json.Unmarshal(msg, &h.Metadata); err != nil {
				return nil, fail("__metadata__ must map strings to strings: %v", err)
			}
			continue
		}
		var e rawEntry
		dec := json.NewDecoder(bytes.NewReader(msg))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&e); err != nil {
			return nil, fail("tensor %q: %v", key, err)
		}
		size, ok := dtypeSizes[e.DType]
		if !ok {
			return nil, fail("tensor %q: unknown dtype %q", key, e.DType)
		}
		if len(e.DataOffsets) != 2 {
			return nil, fail("tensor %q: data_offsets must be [begin, end], got %d numbers", key, len(e.DataOffsets))
		}
		b, en := e.DataOffsets[0], e.DataOffsets[1]
		if b > en || en > uint64(dataLen) {
			return nil, fail("tensor %q: data_offsets [%d, %d) out of range (data section is %d bytes)", key, b, en, dataLen)
		}
		numel := uint64(1)
		for _, d := range e.Shape {
			if d < 0 {
				return nil, fail("tensor %q: negative dimension in shape %v", key, e.Shape)
			}
			if d > 0 && numel > math.MaxInt64/uint64(d) {
				return nil, fail("tensor %q: shape %v overflows", key, e.Shape)
			}
			numel *= uint64(d)
		}
		if numel > math.MaxInt64/uint64(size) || numel*uint64(size) != en-b {
			return nil, fail("tensor %q: %s %v needs %d bytes, data_offsets give %d", key, e.DType, e.Shape, numel*uint64(size), en-b)
		}
		shape := e.Shape
		if shape == nil {
			shape = []int64{}
		}
		h.Tensors = append(h.Tensors, Info{Name: key, DType: e.DType, Shape: shape, Begin: int64(b), End: int64(en)})
	}
	sort.Slice(h.Tensors, func(i, j int) bool {
		a, b := h.Tensors[i], h.Tensors[j]
		if a.Begin != b.Begin {
			return a.Begin < b.Begin
		}
		return a.Name < b.Name
	})
	for i := 1; i < len(h.Tensors); i++ {
		p, c := h.Tensors[i-1], h.Tensors[i]
		if c.Begin < p.End {
			return nil, fail("tensors %q and %q overlap", p.Name, c.Name)
		}
	}
	return h, nil
}

// File is an opened safetensors file.
type File struct {
	Path   string
	Header *Header
	data   []byte // the whole file
	close  func() error
}

// Open reads (memory-maps where possible) and validates a file.
func Open(path string) (*File, error) {
	data, closeFn, err := readAll(path)
	if err != nil {
		return nil, fmt.Errorf("safetensors: %w", err)
	}
	h, err := ParseHeader(path, data, int64(len(data)))
	if err != nil {
		closeFn()
		return nil, err
	}
	return &File{Path: path, Header: h, data: data, close: closeFn}, nil
}

// Close releases the file's memory; byte slices returned by Bytes become invalid.
func (f *File) Close() error {
	if f.close == nil {
		return nil
	}
	err := f.close()
	f.close, f.data = nil, nil
	return err
}

// Bytes returns the raw bytes of tensor name (valid until Close).
func (f *File) Bytes(name string) ([]byte, Info, error) {
	t, ok := f.Header.Lookup(name)
	if !ok {
		return nil, Info{}, fmt.Errorf("safetensors: %s: tensor %q not found", f.Path, name)
	}
	s := f.Header.DataStart
	return f.data[s+t.Begin : s+t.End], t, nil
}

// Tensor is one tensor to write.
type Tensor struct {
	Name  string
	DType string
	Shape []int64
	Data  []byte // little-endian elements
}

// Encode serialises tensors (written in the given order) into the safetensors format.
func Encode(tensors []Tensor, metadata map[string]string) ([]byte, error) {
	head := make(map[string]any, len(tensors)+1)
	if len(metadata) > 0 {
		head["__metadata__"] = metadata
	}
	var off int64
	seen := map[string]bool{}
	for _, t := range tensors {
		if t.Name == "" || t.Name == "__metadata__" || seen[t.Name] {
			return nil, fmt.Errorf("safetensors: bad or duplicate tensor name %q", t.Name)
		}
		seen[t.Name] = true
		size, ok := dtypeSizes[t.DType]
		if !ok {
			return nil, fmt.Errorf("safetensors: tensor %q: unknown dtype %q", t.Name, t.DType)
		}
		n := int64(1)
		for _, d := range t.Shape {
			n *= d
		}
		if n*int64(size) != int64(len(t.Data)) {
			return nil, fmt.Errorf("safetensors: tensor %q: %s %v needs %d bytes, got %d", t.Name, t.DType, t.Shape, n*int64(size), len(t.Data))
		}
		shape := t.Shape
		if shape == nil {
			shape = []int64{}
		}
		head[t.Name] = rawEntry{DType: t.DType, Shape: shape, DataOffsets: []uint64{uint64(off), uint64(off + int64(len(t.Data)))}}
		off += int64(len(t.Data))
	}
	js, err := json.Marshal(head)
	if err != nil {
		return nil, fmt.Errorf("safetensors: header: %w", err)
	}
	// pad the header with spaces so the data section is 8-byte aligned
	for (8+len(js))%8 != 0 {
		js = append(js, ' ')
	}
	out := make([]byte, 8, 8+len(js)+int(off))
	binary.LittleEndian.PutUint64(out, uint64(len(js)))
	out = append(out, js...)
	for _, t := range tensors {
		out = append(out, t.Data...)
	}
	return out, nil
}

// Write writes tensors to path atomically (a temporary file renamed into place).
func Write(path string, tensors []Tensor, metadata map[string]string) error {
	b, err := Encode(tensors, metadata)
	if err != nil {
		return err
	}
	return writeAtomic(path, b)
}

func writeAtomic(path string, b []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("safetensors: %w", err)
	}
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return fmt.Errorf("safetensors: %s: %w", path, err)
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return fmt.Errorf("safetensors: %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("safetensors: %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("safetensors: %w", err)
	}
	return nil
}

// Index is a parsed model.safetensors.index.json.
type Index struct {
	Metadata  map[string]any    `json:"metadata"`
	WeightMap map[string]string `json:"weight_map"` // tensor name -> shard file name
}

// ReadIndex parses a sharded index file; shard names must be plain file
// names in the same folder.
func ReadIndex(path string) (*Index, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("safetensors: %w", err)
	}
	var ix Index
	if err := json.Unmarshal(b, &ix); err != nil {
		return nil, fmt.Errorf("safetensors: %s: %w: %v", path, ErrFormat, err)
	}
	if len(ix.WeightMap) == 0 {
		return nil, fmt.Errorf("safetensors: %s: %w: empty weight_map", path, ErrFormat)
	}
	for name, file := range ix.WeightMap {
		if file == "" || strings.ContainsAny(file, `/\`) || file == "." || file == ".." {
			return nil, fmt.Errorf("safetensors: %s: %w: tensor %q maps to bad shard name %q", path, ErrFormat, name, file)
		}
	}
	return &ix, nil
}

// Shards lists the index's shard file names in sorted order.
func (ix *Index) Shards() []string {
	set := map[string]bool{}
	for _, f := range ix.WeightMap {
		set[f] = true
	}
	out := make([]string, 0, len(set))
	for f := range set {
		out = append(out, f)
	}
	sort.Strings(out)
	return out
}

// WriteIndex writes an index for tensors spread over shards.
func WriteIndex(path string, weightMap map[string]string, totalSize int64) error {
	ix := Index{Metadata: map[string]any{"total_size": totalSize}, WeightMap: weightMap}
	b, err := json.MarshalIndent(ix, "", "  ")
	if err != nil {
		return fmt.Errorf("safetensors: %w", err)
	}
	return writeAtomic(path, append(b, '\n'))
}
