package safetensors

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func le32(vs ...float32) []byte {
	b := make([]byte, 0, 4*len(vs))
	for _, v := range vs {
		b = binary.LittleEndian.AppendUint32(b, mathFloat32bits(v))
	}
	return b
}

func TestEncodeParseRoundTrip(t *testing.T) {
	ts := []Tensor{
		{Name: "a", DType: "F32", Shape: []int64{2, 2}, Data: le32(1, 2, 3, 4)},
		{Name: "b.bias", DType: "BF16", Shape: []int64{3}, Data: []byte{1, 2, 3, 4, 5, 6}},
		{Name: "scalar", DType: "I64", Shape: nil, Data: make([]byte, 8)},
		{Name: "empty", DType: "F32", Shape: []int64{0, 5}, Data: nil},
	}
	b, err := Encode(ts, map[string]string{"format": "pt"})
	if err != nil {
		t.Fatal(err)
	}
	n := binary.LittleEndian.Uint64(b)
	if (8+n)%8 != 0 {
		t.Fatalf("data section not 8-byte aligned: header %d", n)
	}
	h, err := ParseHeader("x", b, int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	if h.Metadata["format"] != "pt" || len(h.Tensors) != 4 {
		t.Fatalf("header %+v", h)
	}
	// offsets follow the given order: a [0,16), b [16,22), scalar [22,30), empty [30,30)
	want := map[string][2]int64{"a": {0, 16}, "b.bias": {16, 22}, "scalar": {22, 30}, "empty": {30, 30}}
	for _, ti := range h.Tensors {
		if w := want[ti.Name]; ti.Begin != w[0] || ti.End != w[1] {
			t.Errorf("%s: [%d,%d) want %v", ti.Name, ti.Begin, ti.End, w)
		}
	}
	p := filepath.Join(t.TempDir(), "m.safetensors")
	if err := Write(p, ts, nil); err != nil {
		t.Fatal(err)
	}
	f, err := Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	d, info, err := f.Bytes("a")
	if err != nil || string(d) != string(le32(1, 2, 3, 4)) || info.Numel() != 4 {
		t.Fatalf("a: %v %v %v", d, info, err)
	}
	if _, _, err := f.Bytes("nope"); err == nil || !strings.Contains(err.Error(), `"nope"`) || !strings.Contains(err.Error(), p) {
		t.Fatalf("missing tensor error %v", err)
	}
}

func TestEncodeErrors(t *testing.T) {
	for _, ts := range [][]Tensor{
		{{Name: "a", DType: "F32", Shape: []int64{2}, Data: make([]byte, 4)}},
		{{Name: "a", DType: "Q4", Shape: []int64{1}, Data: make([]byte, 1)}},
		{{Name: "a", DType: "U8", Shape: []int64{1}, Data: []byte{0}}, {Name: "a", DType: "U8", Shape: []int64{1}, Data: []byte{0}}},
		{{Name: "__metadata__", DType: "U8", Shape: []int64{1}, Data: []byte{0}}},
	} {
		if _, err := Encode(ts, nil); err == nil {
			t.Errorf("Encode(%v) succeeded", ts)
		}
	}
}

func header(js string, data int) []byte {
	b := binary.LittleEndian.AppendUint64(nil, uint64(len(js)))
	b = append(b, js...)
	return append(b, make([]byte, data)...)
}

func TestParseHeaderErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		file []byte
		want string
	}{
		{"short", []byte{1, 2, 3}, "too short"},
		{"huge length", binary.LittleEndian.AppendUint64(nil, 1<<40), "limit"},
		{"length past end", binary.LittleEndian.AppendUint64(nil, 100), "truncated"},
		{"not an object", header(`[1,2]`, 0), "JSON object"},
		{"bad json", header(`{"a":`, 0), "JSON"},
		{"unknown dtype", header(`{"w":{"dtype":"Q4","shape":[1],"data_offsets":[0,1]}}`, 1), `tensor "w": unknown dtype "Q4"`},
		{"offsets past end", header(`{"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}`, 4), `tensor "w": data_offsets [0, 8) out of range`},
		{"reversed offsets", header(`{"w":{"dtype":"F32","shape":[1],"data_offsets":[8,4]}}`, 8), `out of range`},
		{"size mismatch", header(`{"w":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}}`, 8), `F32 [3] needs 12 bytes, data_offsets give 8`},
		{"negative dim", header(`{"w":{"dtype":"F32","shape":[-1],"data_offsets":[0,0]}}`, 0), "negative"},
		{"overflow", header(`{"w":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,0]}}`, 0), "overflow"},
		{"three offsets", header(`{"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4,8]}}`, 8), "data_offsets must be"},
		{"unknown field", header(`{"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4],"x":1}}`, 4), `tensor "w"`},
		{"overlap", header(`{"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"v":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}`, 8), "overlap"},
		{"bad metadata", header(`{"__metadata__":{"a":1}}`, 0), "__metadata__"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseHeader("f.safetensors", tc.file, int64(len(tc.file)))
			if err == nil {
				t.Fatal("no error")
			}
			if !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), "f.safetensors") || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q, want it to wrap ErrFormat and mention %q", err, tc.want)
			}
		})
	}
}

func TestIndex(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "model.safetensors.index.json")
	if err := WriteIndex(p, map[string]string{"a": "s2.safetensors", "b": "s1.safetensors", "c": "s2.safetensors"}, 123); err != nil {
		t.Fatal(err)
	}
	ix, err := ReadIndex(p)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(ix.Shards(), ","); got != "s1.safetensors,s2.safetensors" {
		t.Fatalf("shards %s", got)
	}
	for _, bad := range []string{`{"weight_map":{}}`, `{"weight_map":{"a":"../x"}}`, `{"weight_map":`} {
		os.WriteFile(p, []byte(bad), 0o644)
		if _, err := ReadIndex(p); err == nil {
			t.Errorf("ReadIndex(%s) succeeded", bad)
		}
	}
}

// FuzzParseHeader: no input makes the parser panic, and every accepted
// header describes tensors that lie inside the file without overlapping.
func FuzzParseHeader(f *testing.F) {
	good, _ := Encode([]Tensor{{Name: "a", DType: "F32", Shape: []int64{2}, Data: le32(1, 2)}, {Name: "b", DType: "U8", Shape: []int64{1}, Data: []byte{7}}}, map[string]string{"k": "v"})
	f.Add(good)
	f.Add(header(`{"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}`, 4))
	f.Add(header(`{}`, 0))
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := ParseHeader("fuzz", b, int64(len(b)))
		if err != nil {
			return
		}
		data := int64(len(b)) - h.DataStart
		var prev int64
		for _, ti := range h.Tensors {
			size, _ := DTypeSize(ti.DType)
			if ti.Begin < prev || ti.End > data || ti.End-ti.Begin != ti.Numel()*int64(size) {
				t.Fatalf("accepted bad tensor %+v (data %d)", ti, data)
			}
			prev = ti.End
		}
	})
}
