package parquet

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	pq "github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress"
	"github.com/parquet-go/parquet-go/format"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// hfRow has the column shapes of Hugging Face dataset exports (pyarrow):
// dictionary-encoded strings, an optional string, list<int64>,
// list<string>, floats, int32 and bool.
type hfRow struct {
	Question string   `parquet:"question,dict"`
	Answer   *string  `parquet:"answer,optional,dict"`
	Nums     []int64  `parquet:"nums,list"`
	Tags     []string `parquet:"tags,list"`
	Score    float64  `parquet:"score"`
	Level    float32  `parquet:"level"`
	ID       int32    `parquet:"id"`
	Solved   bool     `parquet:"solved"`
}

func hfRows(n int) []hfRow {
	rows := make([]hfRow, n)
	for i := range rows {
		r := &rows[i]
		r.Question = fmt.Sprintf("Use %d numbers to reach %d; question kind %d", 3+i%2, 10+i%97, i%5)
		if i%7 != 0 {
			a := fmt.Sprintf("answer %d", i%11)
			r.Answer = &a
		}
		for k := 0; k < i%5; k++ {
			r.Nums = append(r.Nums, int64(i*k-50))
		}
		for k := 0; k < i%3; k++ {
			r.Tags = append(r.Tags, []string{"math", "countdown", "arith", "é"}[(i+k)%4])
		}
		r.Score = float64(i) / 8
		r.Level = float32(i%4) + 0.5
		r.ID = int32(i - 100)
		r.Solved = i%2 == 0
	}
	return rows
}

func writeHF(t testing.TB, rows []hfRow, opts ...pq.WriterOption) []byte {
	var buf bytes.Buffer
	w := pq.NewGenericWriter[hfRow](&buf, opts...)
	_, err := w.Write(rows)
	require.NoError(t, err)
	require.NoError(t, w.Close())
	return buf.Bytes()
}

func checkHF(t *testing.T, f *File, want []hfRow) {
	t.Helper()
	assert.Equal(t, []string{"question", "answer", "nums", "tags", "score", "level", "id", "solved"}, f.Columns())
	assert.Equal(t, int64(len(want)), f.NumRows())
	cols := map[string][]Cell{}
	for _, name := range f.Columns() {
		c, err := f.ReadColumn(name, 0)
		require.NoError(t, err, name)
		require.Len(t, c, len(want), name)
		cols[name] = c
	}
	for _, name := range []string{"nums", "tags"} {
		isList, err := f.IsList(name)
		require.NoError(t, err)
		assert.True(t, isList, name)
	}
	for i, w := range want {
		assert.Equal(t, Cell{Strs: []string{w.Question}}, cols["question"][i], "row %d", i)
		if w.Answer == nil {
			assert.Equal(t, Cell{Null: true}, cols["answer"][i], "row %d", i)
		} else {
			assert.Equal(t, Cell{Strs: []string{*w.Answer}}, cols["answer"][i], "row %d", i)
		}
		assert.Equal(t, Cell{Ints: w.Nums}, cols["nums"][i], "row %d", i)
		assert.Equal(t, Cell{Strs: w.Tags}, cols["tags"][i], "row %d", i)
		assert.Equal(t, Cell{Floats: []float64{w.Score}}, cols["score"][i], "row %d", i)
		assert.Equal(t, Cell{Floats: []float64{float64(w.Level)}}, cols["level"][i], "row %d", i)
		assert.Equal(t, Cell{Ints: []int64{int64(w.ID)}}, cols["id"][i], "row %d", i)
		b := int64(0)
		if w.Solved {
			b = 1
		}
		assert.Equal(t, Cell{Ints: []int64{b}}, cols["solved"][i], "row %d", i)
	}
}

// layout reports, for column name, the codec, whether its data pages are
// dictionary-encoded, and how many data pages the file holds.
func layout(t *testing.T, f *File, name string) (codec format.CompressionCodec, dict bool, pages int) {
	t.Helper()
	l, err := f.column(name)
	require.NoError(t, err)
	for _, rg := range f.f.Metadata().RowGroups {
		md := rg.Columns[l.col.Index()].MetaData
		codec = md.Codec
		for _, e := range md.Encoding {
			dict = dict || e == format.RLEDictionary || e == format.PlainDictionary
		}
	}
	for _, rg := range f.f.RowGroups() {
		ps := rg.ColumnChunks()[l.col.Index()].Pages()
		for {
			p, err := ps.ReadPage()
			if err != nil {
				break
			}
			pages++
			pq.Release(p)
		}
		require.NoError(t, ps.Close())
	}
	return codec, dict, pages
}

// TestWriterFiles writes files with parquet-go's own writer in the layouts
// Hugging Face exports use (dictionary-encoded strings, list columns,
// snappy or zstd, several pages and row groups, data pages v1 and v2) and
// reads them back.
func TestWriterFiles(t *testing.T) {
	rows := hfRows(1500)
	for _, tc := range []struct {
		name  string
		codec compress.Codec
		want  format.CompressionCodec
		v2    bool
	}{
		{"snappy", &pq.Snappy, format.Snappy, false},
		{"zstd", &pq.Zstd, format.Zstd, false},
		{"zstd_v2", &pq.Zstd, format.Zstd, true},
		{"gzip", &pq.Gzip, format.Gzip, false},
		{"uncompressed", &pq.Uncompressed, format.Uncompressed, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			version := 1
			if tc.v2 {
				version = 2
			}
			data := writeHF(t, rows, pq.Compression(tc.codec), pq.PageBufferSize(2048), pq.MaxRowsPerRowGroup(600), pq.DataPageVersion(version))
			f, err := Open(data)
			require.NoError(t, err)
			codec, dict, pages := layout(t, f, "question")
			assert.Equal(t, tc.want, codec)
			assert.True(t, dict, "question is dictionary-encoded")
			assert.Greater(t, pages, 3, "several data pages")
			assert.Len(t, f.f.RowGroups(), 3)
			checkHF(t, f, rows)
			part, err := f.ReadColumn("nums", 10)
			require.NoError(t, err)
			assert.Len(t, part, 600, "maxRows stops after the first row group")
		})
	}
}

// TestVendoredZstdFile reads testdata/hf_zstd_dict.parquet, written by
// TestWriterFiles' writer settings (zstd, dictionary pages, several pages
// per column); regenerate with RAGEN_WRITE_PARQUET=1.
func TestVendoredZstdFile(t *testing.T) {
	path := filepath.Join("testdata", "hf_zstd_dict.parquet")
	rows := hfRows(400)
	if os.Getenv("RAGEN_WRITE_PARQUET") == "1" {
		data := writeHF(t, rows, pq.Compression(&pq.Zstd), pq.PageBufferSize(256), pq.MaxRowsPerRowGroup(250))
		require.NoError(t, os.WriteFile(path, data, 0o644))
	}
	f := open(t, "hf_zstd_dict.parquet")
	codec, dict, pages := layout(t, f, "question")
	assert.Equal(t, format.Zstd, codec)
	assert.True(t, dict)
	assert.Greater(t, pages, 2)
	checkHF(t, f, rows)
}

// TestSchemaErrors: columns that do not fit name the column and the shape.
func TestSchemaErrors(t *testing.T) {
	type point struct {
		X int64 `parquet:"x"`
		Y int64 `parquet:"y"`
	}
	type odd struct {
		ID    int64     `parquet:"id"`
		Point point     `parquet:"point"`
		Grid  [][]int64 `parquet:"grid,list"`
	}
	var buf bytes.Buffer
	w := pq.NewGenericWriter[odd](&buf)
	_, err := w.Write([]odd{{ID: 1, Point: point{1, 2}, Grid: [][]int64{{1}, {2, 3}}}})
	require.NoError(t, err)
	require.NoError(t, w.Close())
	f, err := Open(buf.Bytes())
	require.NoError(t, err)
	_, err = f.ReadColumn("point", 0)
	assert.ErrorContains(t, err, `column "point" is a group of 2 fields (x, y)`)
	_, err = f.IsList("grid")
	assert.ErrorContains(t, err, `column "grid" is nested 2 list levels deep`)
	c, err := f.ReadColumn("id", 0)
	require.NoError(t, err)
	assert.Equal(t, []Cell{{Ints: []int64{1}}}, c)
}
