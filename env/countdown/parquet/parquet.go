package parquet

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"strings"

	pq "github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/encoding/thrift"
	"github.com/parquet-go/parquet-go/format"
)

// maxParquetBytes bounds what ReadAll reads into memory.
const maxParquetBytes = 1 << 30

// File is an opened parquet file.
type File struct {
	f    *pq.File
	data []byte
}

// Cell is one row of a column: a scalar (one value) or a list. Integer and
// boolean (0/1) columns fill Ints, BYTE_ARRAY and FIXED_LEN_BYTE_ARRAY
// columns fill Strs, FLOAT and DOUBLE columns fill Floats.
type Cell struct {
	Null     bool // the value (or the whole list) is null
	NullElem bool // a list element is null (and was left out)
	Ints     []int64
	Strs     []string
	Floats   []float64
}

// Open parses a parquet file held in memory.
func Open(data []byte) (f *File, err error) {
	if len(data) < 12 || string(data[:4]) != "PAR1" || string(data[len(data)-4:]) != "PAR1" {
		return nil, errors.New("parquet: not a parquet file (no PAR1 magic)")
	}
	// The library allocates the footer length the file claims before
	// checking it; a corrupt length must not cost a gigabyte.
	if mlen := int64(binary.LittleEndian.Uint32(data[len(data)-8:])); mlen <= 0 || mlen > int64(len(data))-12 {
		return nil, fmt.Errorf("parquet: footer length %d does not fit the %d-byte file", mlen, len(data))
	}
	defer func() {
		if r := recover(); r != nil {
			f, err = nil, fmt.Errorf("parquet: corrupt file: %v", r)
		}
	}()
	pf, err := pq.OpenFile(bytes.NewReader(data), int64(len(data)), pq.SkipPageIndex(true), pq.SkipBloomFilters(true))
	if err != nil {
		return nil, fmt.Errorf("parquet: %w", err)
	}
	return &File{f: pf, data: data}, nil
}

// ReadAll reads a whole parquet file (at most 1 GiB) and opens it.
func ReadAll(r io.Reader) (*File, error) {
	data, err := io.ReadAll(io.LimitReader(r, maxParquetBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxParquetBytes {
		return nil, fmt.Errorf("parquet: file larger than %d bytes", maxParquetBytes)
	}
	return Open(data)
}

// Columns lists the top-level field names, in schema order.
func (f *File) Columns() []string {
	var out []string
	for _, c := range f.f.Root().Columns() {
		out = append(out, c.Name())
	}
	return out
}

// NumRows is the row count the footer declares.
func (f *File) NumRows() int64 { return f.f.NumRows() }

// leaf is the primitive column under a top-level field.
type leaf struct {
	col     *pq.Column
	kind    pq.Kind
	maxDef  int
	maxRep  int
	listDef int // for a list: the definition level of an empty list
}

// column finds top-level field name and the one leaf column under it: a
// scalar, or a list of scalars (any of the LIST encodings, one repeated
// level). Other shapes are an error naming the column.
func (f *File) column(name string) (l leaf, err error) {
	defer func() {
		if r := recover(); r != nil { // the library panics on some corrupt schemas
			l, err = leaf{}, fmt.Errorf("parquet: column %q: corrupt schema: %v", name, r)
		}
	}()
	top, err := f.top(name)
	if err != nil {
		return leaf{}, err
	}
	// Walk down single-child groups, counting the definition levels above
	// the repeated node.
	c, def := top, 0
	listDef := -1
	for {
		if c.Repeated() {
			listDef = def
		}
		if !c.Required() {
			def++
		}
		if c.Leaf() {
			break
		}
		kids := c.Columns()
		if len(kids) != 1 {
			names := make([]string, len(kids))
			for i, k := range kids {
				names[i] = k.Name()
			}
			return leaf{}, fmt.Errorf("parquet: column %q is a group of %d fields (%s); only scalar and list-of-scalar columns can be read", name, len(kids), strings.Join(names, ", "))
		}
		c = kids[0]
	}
	if rep := c.MaxRepetitionLevel(); rep > 1 {
		return leaf{}, fmt.Errorf("parquet: column %q is nested %d list levels deep; only one list level is supported", name, rep)
	}
	if l, err = leafOf(c); err != nil {
		return leaf{}, fmt.Errorf("parquet: column %q %w", name, err)
	}
	l.listDef = listDef
	return l, nil
}

// top is top-level field name (the last of that name).
func (f *File) top(name string) (*pq.Column, error) {
	var top *pq.Column
	for _, c := range f.f.Root().Columns() {
		if c.Name() == name {
			top = c
		}
	}
	if top == nil {
		return nil, fmt.Errorf("parquet: no column %q (columns: %v)", name, f.Columns())
	}
	return top, nil
}

// kindError is a leaf of a physical type the readers do not decode; it
// is ErrUnsupported.
type kindError struct{ kind pq.Kind }

func (e kindError) Error() string {
	return fmt.Sprintf("has physical type %s; only BOOLEAN, INT32, INT64, FLOAT, DOUBLE, BYTE_ARRAY and FIXED_LEN_BYTE_ARRAY can be read", e.kind)
}

func (kindError) Is(target error) bool { return target == ErrUnsupported }

// leafOf is leaf column c, if its physical type is one the readers decode.
func leafOf(c *pq.Column) (leaf, error) {
	l := leaf{col: c, kind: c.Type().Kind(), maxDef: c.MaxDefinitionLevel(), maxRep: c.MaxRepetitionLevel()}
	switch l.kind {
	case pq.Boolean, pq.Int32, pq.Int64, pq.Float, pq.Double, pq.ByteArray, pq.FixedLenByteArray:
		return l, nil
	}
	return leaf{}, kindError{l.kind}
}

// IsList reports whether top-level field name is a list column.
func (f *File) IsList(name string) (bool, error) {
	l, err := f.column(name)
	if err != nil {
		return false, err
	}
	return l.maxRep == 1, nil
}

// ReadColumn reads top-level field name row by row, stopping after the row
// group that reaches maxRows rows (≤ 0: all row groups); callers trim.
func (f *File) ReadColumn(name string, maxRows int) ([]Cell, error) {
	l, err := f.column(name)
	if err != nil {
		return nil, err
	}
	var rows []Cell
	for i, rg := range f.f.RowGroups() {
		if maxRows > 0 && len(rows) >= maxRows {
			break
		}
		if err := f.checkPages(i, l); err != nil {
			return nil, fmt.Errorf("parquet: column %s: %w", name, err)
		}
		n := len(rows)
		rows, err = l.readChunk(rg.ColumnChunks()[l.col.Index()], rows)
		if err != nil {
			return nil, fmt.Errorf("parquet: column %s: %w", name, err)
		}
		if want := rg.NumRows(); int64(len(rows)-n) != want {
			return nil, fmt.Errorf("parquet: row group declares %d rows, column %s holds %d", want, name, len(rows)-n)
		}
	}
	return rows, nil
}

// maxPageBytes bounds the uncompressed size a page header may claim.
const maxPageBytes = 256 << 20

// checkPages walks the page headers of leaf l's column chunk in row group
// rg and checks their sizes against the chunk, and the value counts of the
// run-length encoded levels and dictionary indices against the pages,
// because the library allocates what a header or a run claims before
// reading: one corrupt byte cost 3 GiB.
func (f *File) checkPages(rg int, l leaf) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("corrupt page header: %v", r)
		}
	}()
	md := f.f.Metadata().RowGroups[rg].Columns[l.col.Index()].MetaData
	var values int64 // the values of the data pages so far
	start := md.DataPageOffset
	if md.DictionaryPageOffset > 0 && md.DictionaryPageOffset < start {
		start = md.DictionaryPageOffset
	}
	end := start + md.TotalCompressedSize
	if start < 4 || md.TotalCompressedSize < 0 || end > int64(len(f.data)) {
		return fmt.Errorf("column chunk at %d+%d outside the %d-byte file", start, md.TotalCompressedSize, len(f.data))
	}
	var compact thrift.CompactProtocol
	for pos := start; pos < end; {
		r := bytes.NewReader(f.data[pos:end])
		var h format.PageHeader
		if err := thrift.NewDecoder(compact.NewReader(r)).Decode(&h); err != nil {
			return fmt.Errorf("page header at %d: %w", pos, err)
		}
		pos = end - int64(r.Len())
		if h.CompressedPageSize < 0 || int64(h.CompressedPageSize) > end-pos {
			return fmt.Errorf("page at %d claims %d bytes, the column chunk has %d left", pos, h.CompressedPageSize, end-pos)
		}
		if h.UncompressedPageSize < 0 || h.UncompressedPageSize > maxPageBytes {
			return fmt.Errorf("page at %d claims %d uncompressed bytes (limit %d)", pos, h.UncompressedPageSize, maxPageBytes)
		}
		if md.Codec == format.Snappy {
			// A snappy block starts with its decoded length, which the
			// decoder allocates.
			off := pos
			if v2 := h.DataPageHeaderV2; v2.Valid {
				lv := int64(v2.V.DefinitionLevelsByteLength) + int64(v2.V.RepetitionLevelsByteLength)
				if v2.V.DefinitionLevelsByteLength < 0 || v2.V.RepetitionLevelsByteLength < 0 || lv > int64(h.CompressedPageSize) {
					return fmt.Errorf("page at %d: level lengths %d+%d exceed the page", pos, v2.V.DefinitionLevelsByteLength, v2.V.RepetitionLevelsByteLength)
				}
				off += lv
			}
			if n, k := binary.Uvarint(f.data[off : pos+int64(h.CompressedPageSize)]); k > 0 && n > maxPageBytes {
				return fmt.Errorf("page at %d: snappy block claims %d bytes (limit %d)", pos, n, maxPageBytes)
			}
		}
		if err := l.checkRuns(md, &h, f.data[pos:pos+int64(h.CompressedPageSize)], &values); err != nil {
			return fmt.Errorf("page at %d: %w", pos, err)
		}
		pos += int64(h.CompressedPageSize)
	}
	return nil
}

// checkRuns checks one page: a dictionary page holds at most one value per
// byte; a data page holds at most the values of the column chunk that
// earlier pages left, and its repetition levels, definition levels and
// dictionary indices hold no more values than the page (RLE runs are a
// count and one value: 5 corrupt bytes claim 2^31 values, which the
// library allocates, 1 byte each for levels and 4 for indices).
func (l leaf) checkRuns(md format.ColumnMetaData, h *format.PageHeader, page []byte, values *int64) error {
	if d := h.DictionaryPageHeader; d.Valid {
		if d.V.NumValues < 0 || d.V.NumValues > h.UncompressedPageSize {
			return fmt.Errorf("dictionary page claims %d values in %d bytes", d.V.NumValues, h.UncompressedPageSize)
		}
		return nil
	}
	var n int32
	var enc format.Encoding
	var rep, def, vals []byte // level streams (nil: not checked) and values
	switch {
	case h.DataPageHeader.Valid:
		v := h.DataPageHeader.V
		n, enc = v.NumValues, v.Encoding
		if err := checkCount(n, md.NumValues, values); err != nil {
			return err
		}
		if (l.maxRep == 0 && l.maxDef == 0 && !isDict(enc)) || (l.maxRep > 0 && v.RepetitionLevelEncoding != format.RLE) || (l.maxDef > 0 && v.DefinitionLevelEncoding != format.RLE) {
			return nil // nothing run-length encoded to check, or the deprecated BIT_PACKED levels
		}
		// Levels and values are compressed together.
		data, err := decompress(md.Codec, page, h.UncompressedPageSize)
		if err != nil {
			return err
		}
		prefixed := func(max int) ([]byte, error) {
			if max == 0 {
				return nil, nil
			}
			if len(data) < 4 {
				return nil, errors.New("levels cut short")
			}
			k := int64(binary.LittleEndian.Uint32(data))
			if k > int64(len(data)-4) {
				return nil, fmt.Errorf("levels claim %d bytes, the page has %d", k, len(data)-4)
			}
			b := data[4 : 4+k]
			data = data[4+k:]
			return b, nil
		}
		if rep, err = prefixed(l.maxRep); err != nil {
			return err
		}
		if def, err = prefixed(l.maxDef); err != nil {
			return err
		}
		vals = data
	case h.DataPageHeaderV2.Valid:
		v := h.DataPageHeaderV2.V
		n, enc = v.NumValues, v.Encoding
		if err := checkCount(n, md.NumValues, values); err != nil {
			return err
		}
		// Levels are never compressed; the level lengths were checked
		// against the page in checkPages for snappy, here for all.
		r, d := int64(v.RepetitionLevelsByteLength), int64(v.DefinitionLevelsByteLength)
		if r < 0 || d < 0 || r+d > int64(len(page)) {
			return fmt.Errorf("level lengths %d+%d exceed the %d-byte page", r, d, len(page))
		}
		rep, def = page[:r], page[r:r+d]
		if isDict(enc) {
			vals = page[r+d:]
			if !v.IsCompressed.Valid || v.IsCompressed.V {
				var err error
				if vals, err = decompress(md.Codec, vals, h.UncompressedPageSize); err != nil {
					return err
				}
			}
		}
	default:
		return nil // an index page
	}
	limit := int64(n) + 7 // the last bit-packed group is padded to 8
	if err := checkHybrid(rep, bits.Len(uint(l.maxRep)), limit); err != nil {
		return fmt.Errorf("repetition levels: %w", err)
	}
	if err := checkHybrid(def, bits.Len(uint(l.maxDef)), limit); err != nil {
		return fmt.Errorf("definition levels: %w", err)
	}
	if isDict(enc) && len(vals) > 0 {
		if err := checkHybrid(vals[1:], int(vals[0]), limit); err != nil {
			return fmt.Errorf("dictionary indices: %w", err)
		}
	}
	return nil
}

func isDict(e format.Encoding) bool { return e == format.RLEDictionary || e == format.PlainDictionary }

// checkCount adds a data page's value count to the chunk's running total
// and checks both against the chunk's metadata.
func checkCount(n int32, chunk int64, total *int64) error {
	if n < 0 || *total+int64(n) > chunk {
		return fmt.Errorf("data page claims %d values, the column chunk has %d left", n, chunk-*total)
	}
	*total += int64(n)
	return nil
}

// decompress decodes a page into at most size bytes (size is bounded by
// checkPages).
func decompress(codec format.CompressionCodec, page []byte, size int32) ([]byte, error) {
	if codec == format.Uncompressed {
		return page, nil
	}
	out, err := pq.LookupCompressionCodec(codec).Decode(make([]byte, 0, size), page)
	if err != nil {
		return nil, fmt.Errorf("decompressing: %w", err)
	}
	if len(out) > int(size) {
		return nil, fmt.Errorf("page decompresses to more than the %d bytes it claims", size)
	}
	return out, nil
}

// checkHybrid walks the runs of an RLE/bit-packing hybrid stream of the
// given bit width and fails when they hold more than limit values. Other
// malformations are left to the library's decoder.
func checkHybrid(src []byte, width int, limit int64) error {
	if width > 32 {
		return fmt.Errorf("bit width %d", width)
	}
	var total int64
	for i := 0; i < len(src); {
		u, k := binary.Uvarint(src[i:])
		if k <= 0 {
			return nil
		}
		i += k
		count := int64(u >> 1)
		if u>>1 > uint64(limit) {
			count = limit + 1
		} else if u&1 != 0 { // bit-packed: count groups of 8 values
			count *= 8
			i += int(count * int64(width) / 8)
		} else {
			i += (width + 7) / 8
		}
		if total += count; total > limit {
			return fmt.Errorf("runs claim more than the page's %d values", limit-7)
		}
	}
	return nil
}

// readChunk appends the rows of one column chunk to rows.
func (l leaf) readChunk(chunk pq.ColumnChunk, rows []Cell) (out []Cell, err error) {
	defer func() {
		if r := recover(); r != nil {
			out, err = nil, fmt.Errorf("corrupt column chunk: %v", r)
		}
	}()
	err = eachValue(chunk, func(v pq.Value) (err error) {
		rows, err = l.add(rows, v)
		return err
	})
	if err != nil {
		return nil, err
	}
	return rows, nil
}

// eachValue calls fn with each value of a column chunk, page by page.
func eachValue(chunk pq.ColumnChunk, fn func(pq.Value) error) error {
	pages := chunk.Pages()
	defer pages.Close()
	buf := make([]pq.Value, 1024)
	for {
		page, err := pages.ReadPage()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		err = func() error {
			defer pq.Release(page)
			vr := page.Values()
			for {
				n, err := vr.ReadValues(buf)
				for _, v := range buf[:n] {
					if err := fn(v); err != nil {
						return err
					}
				}
				if err == io.EOF {
					return nil
				}
				if err != nil {
					return err
				}
			}
		}()
		if err != nil {
			return err
		}
	}
}

// add places one leaf value into rows by its repetition and definition
// levels.
func (l leaf) add(rows []Cell, v pq.Value) ([]Cell, error) {
	def := v.DefinitionLevel()
	if v.RepetitionLevel() == 0 {
		rows = append(rows, Cell{})
	} else if len(rows) == 0 {
		return nil, errors.New("continued list before the first row")
	}
	c := &rows[len(rows)-1]
	if l.maxRep == 1 {
		switch {
		case def < l.listDef:
			c.Null = true
			return rows, nil
		case def == l.listDef:
			return rows, nil // empty list
		}
	}
	if def < l.maxDef {
		if l.maxRep == 1 {
			c.NullElem = true
		} else {
			c.Null = true
		}
		return rows, nil
	}
	switch l.kind {
	case pq.Boolean:
		b := int64(0)
		if v.Boolean() {
			b = 1
		}
		c.Ints = append(c.Ints, b)
	case pq.Int32:
		c.Ints = append(c.Ints, int64(v.Int32()))
	case pq.Int64:
		c.Ints = append(c.Ints, v.Int64())
	case pq.Float:
		c.Floats = append(c.Floats, float64(v.Float()))
	case pq.Double:
		c.Floats = append(c.Floats, v.Double())
	default:
		c.Strs = append(c.Strs, string(v.ByteArray()))
	}
	return rows, nil
}
