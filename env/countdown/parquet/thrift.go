package parquet

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// A minimal Thrift compact-protocol decoder, enough for parquet metadata.
// It decodes any struct generically into tstruct (field id → value) so
// that unknown fields are skipped by construction.

// Compact type ids.
const (
	tStop      = 0
	tBoolTrue  = 1
	tBoolFalse = 2
	tByte      = 3
	tI16       = 4
	tI32       = 5
	tI64       = 6
	tDouble    = 7
	tBinary    = 8
	tList      = 9
	tSet       = 10
	tMap       = 11
	tStruct    = 12
)

// tstruct holds a decoded struct's fields. Values are int64 (all integer
// types), bool, float64, []byte, []any (lists and sets), tstruct, or nil
// for maps (skipped).
type tstruct map[int16]any

type tdecoder struct {
	b     []byte
	pos   int
	depth int
}

var errThriftEOF = errors.New("thrift: truncated data")

const maxThriftDepth = 64

func (d *tdecoder) byte() (byte, error) {
	if d.pos >= len(d.b) {
		return 0, errThriftEOF
	}
	c := d.b[d.pos]
	d.pos++
	return c, nil
}

func (d *tdecoder) uvarint() (uint64, error) {
	v, n := binary.Uvarint(d.b[d.pos:])
	if n <= 0 {
		if n == 0 {
			return 0, errThriftEOF
		}
		return 0, errors.New("thrift: varint overflow")
	}
	d.pos += n
	return v, nil
}

func (d *tdecoder) zigzag() (int64, error) {
	u, err := d.uvarint()
	if err != nil {
		return 0, err
	}
	return int64(u>>1) ^ -int64(u&1), nil
}

func (d *tdecoder) length() (int, error) {
	u, err := d.uvarint()
	if err != nil {
		return 0, err
	}
	if u > uint64(len(d.b)-d.pos) {
		return 0, fmt.Errorf("thrift: length %d exceeds the %d bytes left", u, len(d.b)-d.pos)
	}
	return int(u), nil
}

func (d *tdecoder) value(typ byte) (any, error) {
	switch typ {
	case tBoolTrue:
		return true, nil
	case tBoolFalse:
		return false, nil
	case tByte:
		c, err := d.byte()
		return int64(int8(c)), err
	case tI16, tI32, tI64:
		return d.zigzag()
	case tDouble:
		if d.pos+8 > len(d.b) {
			return nil, errThriftEOF
		}
		v := math.Float64frombits(binary.LittleEndian.Uint64(d.b[d.pos:]))
		d.pos += 8
		return v, nil
	case tBinary:
		n, err := d.length()
		if err != nil {
			return nil, err
		}
		v := d.b[d.pos : d.pos+n]
		d.pos += n
		return v, nil
	case tList, tSet:
		return d.list()
	case tMap:
		return nil, d.skipMap()
	case tStruct:
		return d.structure()
	}
	return nil, fmt.Errorf("thrift: unknown type %d", typ)
}

func (d *tdecoder) list() ([]any, error) {
	h, err := d.byte()
	if err != nil {
		return nil, err
	}
	size := int(h >> 4)
	et := h & 0x0f
	if size == 15 {
		if size, err = d.length(); err != nil {
			return nil, err
		}
	}
	if size > len(d.b)-d.pos {
		return nil, fmt.Errorf("thrift: list of %d elements exceeds the data", size)
	}
	out := make([]any, 0, size)
	for i := 0; i < size; i++ {
		var v any
		if et == tBoolTrue || et == tBoolFalse {
			c, err := d.byte()
			if err != nil {
				return nil, err
			}
			v = c == 1
		} else if v, err = d.nested(et); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

func (d *tdecoder) nested(typ byte) (any, error) {
	d.depth++
	defer func() { d.depth-- }()
	if d.depth > maxThriftDepth {
		return nil, errors.New("thrift: nesting too deep")
	}
	return d.value(typ)
}

func (d *tdecoder) skipMap() error {
	n, err := d.length()
	if err != nil {
		return err
	}
	if n == 0 {
		return nil
	}
	kv, err := d.byte()
	if err != nil {
		return err
	}
	for i := 0; i < n; i++ {
		if _, err := d.nested(kv >> 4); err != nil {
			return err
		}
		if _, err := d.nested(kv & 0x0f); err != nil {
			return err
		}
	}
	return nil
}

func (d *tdecoder) structure() (tstruct, error) {
	s := tstruct{}
	var last int16
	for {
		h, err := d.byte()
		if err != nil {
			return nil, err
		}
		typ := h & 0x0f
		if typ == tStop {
			return s, nil
		}
		id := last + int16(h>>4)
		if h>>4 == 0 {
			v, err := d.zigzag()
			if err != nil {
				return nil, err
			}
			id = int16(v)
		}
		last = id
		v, err := d.nested(typ)
		if err != nil {
			return nil, err
		}
		s[id] = v
	}
}

// Typed accessors: ok is false when the field is absent or of another type.

func (s tstruct) i64(id int16) (int64, bool) {
	v, ok := s[id].(int64)
	return v, ok
}

func (s tstruct) str(id int16) (string, bool) {
	v, ok := s[id].([]byte)
	return string(v), ok
}

func (s tstruct) sub(id int16) (tstruct, bool) {
	v, ok := s[id].(tstruct)
	return v, ok
}

func (s tstruct) list(id int16) ([]any, bool) {
	v, ok := s[id].([]any)
	return v, ok
}

func (s tstruct) flag(id int16, def bool) bool {
	if v, ok := s[id].(bool); ok {
		return v
	}
	return def
}
