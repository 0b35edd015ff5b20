package parquet

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// maxParquetBytes bounds the file read into memory; maxColumnValues the
// level entries of one column chunk.
const (
	maxParquetBytes = 1 << 30
	maxColumnValues = 1 << 22
)

// Physical types, repetition types, encodings, codecs and page types.
const (
	ptInt32     = 1
	ptInt64     = 2
	ptByteArray = 6

	repRequired = 0
	repOptional = 1
	repRepeated = 2

	encPlain     = 0
	encPlainDict = 2
	encRLE       = 3
	encRLEDict   = 8

	codecUncompressed = 0
	codecSnappy       = 1
	codecGzip         = 2

	pageData   = 0
	pageIndex  = 1
	pageDict   = 2
	pageDataV2 = 3
)

var physicalNames = map[int64]string{0: "BOOLEAN", 1: "INT32", 2: "INT64", 3: "INT96", 4: "FLOAT", 5: "DOUBLE", 6: "BYTE_ARRAY", 7: "FIXED_LEN_BYTE_ARRAY"}
var codecNames = map[int64]string{0: "UNCOMPRESSED", 1: "SNAPPY", 2: "GZIP", 3: "LZO", 4: "BROTLI", 5: "LZ4", 6: "ZSTD", 7: "LZ4_RAW"}
var encodingNames = map[int64]string{0: "PLAIN", 2: "PLAIN_DICTIONARY", 3: "RLE", 4: "BIT_PACKED", 5: "DELTA_BINARY_PACKED", 6: "DELTA_LENGTH_BYTE_ARRAY", 7: "DELTA_BYTE_ARRAY", 8: "RLE_DICTIONARY", 9: "BYTE_STREAM_SPLIT"}

func nameOf(m map[int64]string, v int64) string {
	if s, ok := m[v]; ok {
		return s
	}
	return fmt.Sprintf("#%d", v)
}

// leaf is a primitive column of the schema.
type leaf struct {
	path     []string
	physical int64
	maxDef   int
	maxRep   int
	listDef  int // for a repeated column: the def level of an empty list
}

// File is an opened parquet file.
type File struct {
	data      []byte
	leaves    []leaf
	rowGroups []tstruct
	numRows   int64
}

func openParquet(data []byte) (*File, error) {
	if len(data) < 12 || string(data[:4]) != "PAR1" || string(data[len(data)-4:]) != "PAR1" {
		return nil, errors.New("parquet: not a parquet file (no PAR1 magic)")
	}
	mlen := int(binary.LittleEndian.Uint32(data[len(data)-8:]))
	if mlen <= 0 || mlen > len(data)-12 {
		return nil, fmt.Errorf("parquet: footer length %d does not fit the %d-byte file", mlen, len(data))
	}
	d := &tdecoder{b: data[len(data)-8-mlen : len(data)-8]}
	meta, err := d.structure()
	if err != nil {
		return nil, fmt.Errorf("parquet: footer: %w", err)
	}
	f := &File{data: data}
	f.numRows, _ = meta.i64(3)
	schema, ok := meta.list(2)
	if !ok || len(schema) == 0 {
		return nil, errors.New("parquet: footer has no schema")
	}
	elems := make([]tstruct, len(schema))
	for i, s := range schema {
		if elems[i], ok = s.(tstruct); !ok {
			return nil, errors.New("parquet: malformed schema element")
		}
	}
	pos := 1
	rootChildren, _ := elems[0].i64(5)
	for c := int64(0); c < rootChildren; c++ {
		if err := f.walk(elems, &pos, nil, 0, 0, -1); err != nil {
			return nil, err
		}
	}
	rgs, _ := meta.list(4)
	for _, rg := range rgs {
		s, ok := rg.(tstruct)
		if !ok {
			return nil, errors.New("parquet: malformed row group")
		}
		f.rowGroups = append(f.rowGroups, s)
	}
	return f, nil
}

// walk consumes the schema subtree at *pos, recording its leaves.
func (f *File) walk(elems []tstruct, pos *int, path []string, def, rep, listDef int) error {
	if *pos >= len(elems) {
		return errors.New("parquet: schema ends early")
	}
	if len(path) > 16 {
		return errors.New("parquet: schema nested too deeply")
	}
	e := elems[*pos]
	*pos++
	name, _ := e.str(4)
	path = append(append([]string(nil), path...), name)
	rt, _ := e.i64(3)
	switch rt {
	case repOptional:
		def++
	case repRepeated:
		listDef = def
		def++
		rep++
	}
	children, _ := e.i64(5)
	if children == 0 {
		pt, ok := e.i64(1)
		if !ok {
			return fmt.Errorf("parquet: column %v has no type", path)
		}
		f.leaves = append(f.leaves, leaf{path: path, physical: pt, maxDef: def, maxRep: rep, listDef: listDef})
		return nil
	}
	for c := int64(0); c < children; c++ {
		if err := f.walk(elems, pos, path, def, rep, listDef); err != nil {
			return err
		}
	}
	return nil
}

// column finds the single leaf under top-level field name.
func (f *File) column(name string) (int, leaf, error) {
	idx := -1
	for i, l := range f.leaves {
		if l.path[0] == name {
			if idx >= 0 {
				return 0, leaf{}, fmt.Errorf("parquet: field %q has several leaf columns", name)
			}
			idx = i
		}
	}
	if idx < 0 {
		var names []string
		for _, l := range f.leaves {
			names = append(names, l.path[0])
		}
		return 0, leaf{}, fmt.Errorf("parquet: no column %q (columns: %v)", name, names)
	}
	l := f.leaves[idx]
	if l.physical != ptInt32 && l.physical != ptInt64 && l.physical != ptByteArray {
		return 0, leaf{}, fmt.Errorf("parquet: column %q has physical type %s; only INT32, INT64 and BYTE_ARRAY are supported", name, nameOf(physicalNames, l.physical))
	}
	if l.maxRep > 1 {
		return 0, leaf{}, fmt.Errorf("parquet: column %q is nested %d levels deep; only one list level is supported", name, l.maxRep)
	}
	return idx, l, nil
}

// Cell is one row of a column: a scalar (one value) or a list. Integer
// columns fill Ints, BYTE_ARRAY columns fill Strs.
type Cell struct {
	Null     bool // the value (or the whole list) is null
	NullElem bool // a list element is null (and was left out)
	Ints     []int64
	Strs     []string
}

// values holds decoded values of one physical kind.
type values struct {
	ints []int64
	strs []string
}

func (v values) len() int { return len(v.ints) + len(v.strs) }

// readColumn reads column idx of row group rg.
func (f *File) readColumn(rg tstruct, idx int, l leaf) ([]Cell, error) {
	cols, _ := rg.list(1)
	if idx >= len(cols) {
		return nil, fmt.Errorf("parquet: row group has %d column chunks, want column %d", len(cols), idx)
	}
	cc, ok := cols[idx].(tstruct)
	if !ok {
		return nil, errors.New("parquet: malformed column chunk")
	}
	if p, ok := cc.str(1); ok && p != "" {
		return nil, fmt.Errorf("parquet: column data in another file (%q) is not supported", p)
	}
	md, ok := cc.sub(3)
	if !ok {
		return nil, errors.New("parquet: column chunk without metadata")
	}
	codec, _ := md.i64(4)
	numValues, _ := md.i64(5)
	start, _ := md.i64(9)
	if dp, ok := md.i64(11); ok && dp > 0 && dp < start {
		start = dp
	}
	if start < 4 || start >= int64(len(f.data)) {
		return nil, fmt.Errorf("parquet: column chunk offset %d outside the file", start)
	}
	if numValues < 0 || numValues > maxColumnValues {
		return nil, fmt.Errorf("parquet: column chunk declares %d values", numValues)
	}
	var dict *values
	var rows []Cell
	pos := int(start)
	var seen int64
	for seen < numValues {
		if pos >= len(f.data) {
			return nil, errors.New("parquet: column chunk runs past the end of the file")
		}
		d := &tdecoder{b: f.data[pos:]}
		ph, err := d.structure()
		if err != nil {
			return nil, fmt.Errorf("parquet: page header at %d: %w", pos, err)
		}
		pos += d.pos
		ptype, _ := ph.i64(1)
		usize, _ := ph.i64(2)
		csize, _ := ph.i64(3)
		if csize < 0 || int64(pos)+csize > int64(len(f.data)) || usize < 0 || usize > maxParquetBytes {
			return nil, fmt.Errorf("parquet: page at %d has bad sizes (%d compressed, %d uncompressed)", pos, csize, usize)
		}
		raw := f.data[pos : pos+int(csize)]
		pos += int(csize)
		switch ptype {
		case pageDict:
			h, _ := ph.sub(7)
			n, _ := h.i64(1)
			enc, _ := h.i64(2)
			if enc != encPlain && enc != encPlainDict {
				return nil, fmt.Errorf("parquet: dictionary page encoding %s not supported", nameOf(encodingNames, enc))
			}
			page, err := decompress(codec, raw, int(usize))
			if err != nil {
				return nil, err
			}
			d, err := plainValues(page, l.physical, int(n))
			if err != nil {
				return nil, fmt.Errorf("parquet: dictionary page: %w", err)
			}
			dict = &d
		case pageData:
			h, _ := ph.sub(5)
			n, _ := h.i64(1)
			enc, _ := h.i64(2)
			if n < 0 || n > numValues-seen {
				return nil, fmt.Errorf("parquet: data page declares %d values, %d left in the chunk", n, numValues-seen)
			}
			page, err := decompress(codec, raw, int(usize))
			if err != nil {
				return nil, err
			}
			var reps, defs []int
			if l.maxRep > 0 {
				if reps, page, err = prefixedLevels(page, l.maxRep, int(n)); err != nil {
					return nil, fmt.Errorf("parquet: repetition levels: %w", err)
				}
			}
			if l.maxDef > 0 {
				if defs, page, err = prefixedLevels(page, l.maxDef, int(n)); err != nil {
					return nil, fmt.Errorf("parquet: definition levels: %w", err)
				}
			}
			if rows, err = assemble(rows, page, enc, dict, l, int(n), reps, defs); err != nil {
				return nil, err
			}
			seen += n
		case pageDataV2:
			h, _ := ph.sub(8)
			n, _ := h.i64(1)
			if n < 0 || n > numValues-seen {
				return nil, fmt.Errorf("parquet: data page declares %d values, %d left in the chunk", n, numValues-seen)
			}
			enc, _ := h.i64(4)
			dlen, _ := h.i64(5)
			rlen, _ := h.i64(6)
			if rlen < 0 || dlen < 0 || rlen+dlen > int64(len(raw)) {
				return nil, errors.New("parquet: v2 page level lengths exceed the page")
			}
			var reps, defs []int
			if l.maxRep > 0 {
				if reps, err = rleLevels(raw[:rlen], bitWidth(l.maxRep), int(n)); err != nil {
					return nil, fmt.Errorf("parquet: repetition levels: %w", err)
				}
			}
			if l.maxDef > 0 {
				if defs, err = rleLevels(raw[rlen:rlen+dlen], bitWidth(l.maxDef), int(n)); err != nil {
					return nil, fmt.Errorf("parquet: definition levels: %w", err)
				}
			}
			vals := raw[rlen+dlen:]
			if h.flag(7, true) {
				if vals, err = decompress(codec, vals, int(usize-rlen-dlen)); err != nil {
					return nil, err
				}
			}
			if rows, err = assemble(rows, vals, enc, dict, l, int(n), reps, defs); err != nil {
				return nil, err
			}
			seen += n
		case pageIndex:
		default:
			return nil, fmt.Errorf("parquet: page type %d not supported", ptype)
		}
	}
	return rows, nil
}

func decompress(codec int64, raw []byte, usize int) ([]byte, error) {
	switch codec {
	case codecUncompressed:
		return raw, nil
	case codecSnappy:
		out, err := snappyDecode(raw, usize)
		if err != nil {
			return nil, fmt.Errorf("parquet: %w", err)
		}
		return out, nil
	case codecGzip:
		zr, err := gzip.NewReader(bytes.NewReader(raw))
		if err != nil {
			return nil, fmt.Errorf("parquet: gzip: %w", err)
		}
		out, err := io.ReadAll(io.LimitReader(zr, int64(usize)+1))
		if err != nil {
			return nil, fmt.Errorf("parquet: gzip: %w", err)
		}
		if len(out) != usize {
			return nil, fmt.Errorf("parquet: gzip page is %d bytes, header says %d", len(out), usize)
		}
		return out, nil
	}
	return nil, fmt.Errorf("parquet: compression codec %s not supported (UNCOMPRESSED, SNAPPY and GZIP are)", nameOf(codecNames, codec))
}

func bitWidth(max int) int {
	w := 0
	for max > 0 {
		w++
		max >>= 1
	}
	return w
}

// prefixedLevels reads v1-page levels: a 4-byte length, then RLE data.
func prefixedLevels(page []byte, max, n int) ([]int, []byte, error) {
	if len(page) < 4 {
		return nil, nil, errors.New("truncated")
	}
	l := int(binary.LittleEndian.Uint32(page))
	if l < 0 || l > len(page)-4 {
		return nil, nil, fmt.Errorf("length %d exceeds the page", l)
	}
	lv, err := rleLevels(page[4:4+l], bitWidth(max), n)
	if err != nil {
		return nil, nil, err
	}
	for _, v := range lv {
		if v > max {
			return nil, nil, fmt.Errorf("level %d above the maximum %d", v, max)
		}
	}
	return lv, page[4+l:], nil
}

// rleLevels decodes n values of the RLE / bit-packing hybrid encoding.
func rleLevels(b []byte, width, n int) ([]int, error) {
	if width > 32 {
		return nil, fmt.Errorf("bit width %d too large", width)
	}
	out := make([]int, 0, min(n, 1<<16))
	pos := 0
	byteWidth := (width + 7) / 8
	for len(out) < n {
		h, k := binary.Uvarint(b[pos:])
		if k <= 0 {
			return nil, fmt.Errorf("truncated run header after %d of %d values", len(out), n)
		}
		pos += k
		if h&1 == 0 { // RLE run
			count := int(h >> 1)
			if pos+byteWidth > len(b) {
				return nil, errors.New("truncated RLE value")
			}
			v := 0
			for i := 0; i < byteWidth; i++ {
				v |= int(b[pos+i]) << (8 * i)
			}
			pos += byteWidth
			if count > n-len(out) {
				count = n - len(out)
			}
			for i := 0; i < count; i++ {
				out = append(out, v)
			}
			continue
		}
		groups := int(h >> 1)
		nbytes := groups * width
		if groups < 0 || nbytes < 0 || pos+nbytes > len(b) {
			return nil, errors.New("truncated bit-packed run")
		}
		for i := 0; i < groups*8 && len(out) < n; i++ {
			bit := i * width
			v := 0
			for j := 0; j < width; j++ {
				if b[pos+(bit+j)/8]>>((bit+j)%8)&1 == 1 {
					v |= 1 << j
				}
			}
			out = append(out, v)
		}
		pos += nbytes
	}
	return out, nil
}

// plainValues decodes n PLAIN values: little-endian INT32/INT64, or
// BYTE_ARRAY as a 4-byte length and the bytes.
func plainValues(b []byte, physical int64, n int) (values, error) {
	if physical == ptByteArray {
		if n < 0 || n > len(b)/4 {
			return values{}, fmt.Errorf("%d PLAIN byte arrays need at least %d bytes, page has %d", n, 4*n, len(b))
		}
		out := make([]string, n)
		pos := 0
		for i := range out {
			if pos+4 > len(b) {
				return values{}, errors.New("truncated byte array length")
			}
			l := int(binary.LittleEndian.Uint32(b[pos:]))
			pos += 4
			if l < 0 || l > len(b)-pos {
				return values{}, fmt.Errorf("byte array of %d bytes runs past the page", l)
			}
			out[i] = string(b[pos : pos+l])
			pos += l
		}
		return values{strs: out}, nil
	}
	size := 8
	if physical == ptInt32 {
		size = 4
	}
	if n < 0 || n > len(b)/size {
		return values{}, fmt.Errorf("%d PLAIN values need %d bytes, page has %d", n, n*size, len(b))
	}
	out := make([]int64, n)
	for i := range out {
		if size == 4 {
			out[i] = int64(int32(binary.LittleEndian.Uint32(b[4*i:])))
		} else {
			out[i] = int64(binary.LittleEndian.Uint64(b[8*i:]))
		}
	}
	return values{ints: out}, nil
}

// assemble decodes a page's values and appends its rows to rows.
func assemble(rows []Cell, raw []byte, enc int64, dict *values, l leaf, n int, reps, defs []int) ([]Cell, error) {
	present := n
	if defs != nil {
		present = 0
		for _, d := range defs {
			if d == l.maxDef {
				present++
			}
		}
	}
	var vals values
	var err error
	switch enc {
	case encPlain:
		vals, err = plainValues(raw, l.physical, present)
	case encPlainDict, encRLEDict:
		if dict == nil {
			return nil, errors.New("parquet: dictionary-encoded page without a dictionary page")
		}
		if present > 0 {
			if len(raw) < 1 {
				return nil, errors.New("parquet: dictionary indices missing")
			}
			var idx []int
			if idx, err = rleLevels(raw[1:], int(raw[0]), present); err == nil {
				vals, err = dict.pick(idx)
			}
		}
	default:
		return nil, fmt.Errorf("parquet: value encoding %s not supported (PLAIN and dictionary encodings are)", nameOf(encodingNames, enc))
	}
	if err != nil {
		return nil, fmt.Errorf("parquet: values: %w", err)
	}
	vi := 0
	for i := 0; i < n; i++ {
		rep, def := 0, l.maxDef
		if reps != nil {
			rep = reps[i]
		}
		if defs != nil {
			def = defs[i]
		}
		if rep == 0 || len(rows) == 0 {
			rows = append(rows, Cell{})
		}
		c := &rows[len(rows)-1]
		switch {
		case def == l.maxDef:
			if vals.strs != nil {
				c.Strs = append(c.Strs, vals.strs[vi])
			} else {
				c.Ints = append(c.Ints, vals.ints[vi])
			}
			vi++
		case l.maxRep > 0 && def > l.listDef:
			c.NullElem = true
		case l.maxRep > 0 && def == l.listDef:
			// an empty list
		default:
			c.Null = true
		}
	}
	return rows, nil
}

// pick returns the dictionary entries at idx.
func (d *values) pick(idx []int) (values, error) {
	n := d.len()
	var out values
	if d.strs != nil {
		out.strs = make([]string, len(idx))
	} else {
		out.ints = make([]int64, len(idx))
	}
	for i, k := range idx {
		if k >= n {
			return values{}, fmt.Errorf("dictionary index %d outside the %d-entry dictionary", k, n)
		}
		if d.strs != nil {
			out.strs[i] = d.strs[k]
		} else {
			out.ints[i] = d.ints[k]
		}
	}
	return out, nil
}

// Open parses a parquet file held in memory.
func Open(data []byte) (*File, error) { return openParquet(data) }

// ReadAll reads a whole parquet file (at most 1 GiB) and opens it.
func ReadAll(r io.Reader) (*File, error) {
	data, err := io.ReadAll(io.LimitReader(r, maxParquetBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxParquetBytes {
		return nil, fmt.Errorf("parquet: file larger than %d bytes", maxParquetBytes)
	}
	return openParquet(data)
}

// Columns lists the top-level field names, in schema order.
func (f *File) Columns() []string {
	var out []string
	for _, l := range f.leaves {
		if len(out) == 0 || out[len(out)-1] != l.path[0] {
			out = append(out, l.path[0])
		}
	}
	return out
}

// NumRows is the row count the footer declares.
func (f *File) NumRows() int64 { return f.numRows }

// IsList reports whether top-level field name is a list column.
func (f *File) IsList(name string) (bool, error) {
	_, l, err := f.column(name)
	if err != nil {
		return false, err
	}
	return l.maxRep == 1, nil
}

// ReadColumn reads top-level field name row by row, stopping after the row
// group that reaches maxRows rows (≤ 0: all row groups); callers trim.
func (f *File) ReadColumn(name string, maxRows int) ([]Cell, error) {
	idx, l, err := f.column(name)
	if err != nil {
		return nil, err
	}
	var rows []Cell
	for _, rg := range f.rowGroups {
		if maxRows > 0 && len(rows) >= maxRows {
			break
		}
		cells, err := f.readColumn(rg, idx, l)
		if err != nil {
			return nil, fmt.Errorf("%w (column %s)", err, name)
		}
		if want, ok := rg.i64(3); ok && int64(len(cells)) != want {
			return nil, fmt.Errorf("parquet: row group declares %d rows, column %s holds %d", want, name, len(cells))
		}
		rows = append(rows, cells...)
	}
	return rows, nil
}
