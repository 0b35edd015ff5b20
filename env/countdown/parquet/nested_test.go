package parquet

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	pq "github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/deprecated"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// plain turns ReadValues' values into what encoding/json decodes: numbers
// as float64, a Group as a map (its field order checked against want's
// keys separately).
func plain(v any) any {
	switch x := v.(type) {
	case int64:
		return float64(x)
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = plain(e)
		}
		return out
	case *Group:
		m := map[string]any{}
		for i, n := range x.Names {
			m[n] = plain(x.Values[i])
		}
		return m
	}
	return v
}

// testdata/nested.parquet was written by testdata/gen_nested.js with
// parquet-wasm (arrow-rs) from the rows in testdata/nested.json: structs,
// a list of structs, a list of lists, a list of bools and a struct of a
// struct of a list, nulls at every level, three row groups.
func TestReadValuesMatchesWriterRows(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "nested.json"))
	require.NoError(t, err)
	var want []map[string]any
	require.NoError(t, json.Unmarshal(b, &want))
	f := open(t, "nested.parquet")
	require.Len(t, f.f.RowGroups(), 3)
	require.Equal(t, []string{"id", "meta", "tests", "grid", "flags", "score", "info"}, f.Columns())
	for _, name := range f.Columns() {
		got, err := f.ReadValues(name, 0)
		require.NoError(t, err, name)
		require.Len(t, got, len(want), name)
		for i, row := range want {
			assert.Equal(t, row[name], plain(got[i]), "row %d column %s", i, name)
		}
	}
	// struct fields come in schema order, booleans as bools
	meta, err := f.ReadValues("meta", 0)
	require.NoError(t, err)
	g := meta[2].(*Group)
	assert.Equal(t, []string{"func_name", "n", "ok"}, g.Names)
	assert.Equal(t, []any{nil, int64(-44), true}, g.Values)
	v, ok := g.Get("n")
	assert.True(t, ok)
	assert.Equal(t, int64(-44), v)
	_, ok = g.Get("missing")
	assert.False(t, ok)
	// maxRows stops after the row group that reaches it
	few, err := f.ReadValues("tests", 5)
	require.NoError(t, err)
	assert.Len(t, few, 16)
}

// The scalar and list-of-scalar files read the same through ReadValues as
// through ReadColumn.
func TestReadValuesAgreesWithReadColumn(t *testing.T) {
	for _, name := range []string{"snappy_dict.parquet", "snappy_v2.parquet", "null_nums.parquet", "zstd.parquet"} {
		f := open(t, name)
		for _, col := range f.Columns() {
			cells, err := f.ReadColumn(col, 0)
			require.NoError(t, err)
			vals, err := f.ReadValues(col, 0)
			require.NoError(t, err)
			list, err := f.IsList(col)
			require.NoError(t, err)
			require.Len(t, vals, len(cells))
			for i, c := range cells {
				switch {
				case c.Null:
					assert.Nil(t, vals[i], "%s %s row %d", name, col, i)
				case list && !c.NullElem:
					want := []any{}
					for _, x := range c.Ints {
						want = append(want, x)
					}
					assert.Equal(t, want, vals[i], "%s %s row %d", name, col, i)
				case !list:
					assert.Equal(t, c.Ints[0], vals[i], "%s %s row %d", name, col, i)
				}
			}
		}
	}
}

// Repeated fields with no LIST annotation (the format's oldest list form)
// read as lists: of strings, and of groups.
func TestReadValuesRepeatedFields(t *testing.T) {
	schema := pq.NewSchema("row", pq.Group{
		"raw": pq.Repeated(pq.String()),
		"two": pq.Group{"pairs": pq.Repeated(pq.Group{"a": pq.Int(64), "b": pq.String()})},
	})
	var buf bytes.Buffer
	w := pq.NewWriter(&buf, schema)
	rows := []map[string]any{
		{"raw": []string{"p", "q"}, "two": map[string]any{"pairs": []map[string]any{{"a": int64(7), "b": "s"}, {"a": int64(8), "b": ""}}}},
		{"raw": []string{}, "two": map[string]any{"pairs": []map[string]any{}}},
	}
	for _, r := range rows {
		require.NoError(t, w.Write(r))
	}
	require.NoError(t, w.Close())
	f, err := Open(buf.Bytes())
	require.NoError(t, err)
	raw, err := f.ReadValues("raw", 0)
	require.NoError(t, err)
	assert.Equal(t, []any{[]any{"p", "q"}, []any{}}, raw)
	two, err := f.ReadValues("two", 0)
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"pairs": []any{map[string]any{"a": 7.0, "b": "s"}, map[string]any{"a": 8.0, "b": ""}}}, plain(two[0]))
	assert.Equal(t, map[string]any{"pairs": []any{}}, plain(two[1]))
}

func ExampleFile_ReadValues() {
	data, _ := os.ReadFile("testdata/nested.parquet")
	f, _ := Open(data)
	metas, _ := f.ReadValues("meta", 0) // a struct column
	g := metas[2].(*Group)
	fmt.Println(g.Names, g.Values)
	grids, _ := f.ReadValues("grid", 0) // a list of lists of int64
	fmt.Println(grids[2], grids[3])
	// Output:
	// [func_name n ok] [<nil> -44 true]
	// [[-343 95 <nil>] [214 362 -348]] [<nil> [136 -428]]
}

// An INT96 column is an error naming it from both readers, and
// ReadValues' error is ErrUnsupported (DeepCoder skips such columns).
func TestUnsupportedKind(t *testing.T) {
	type row struct {
		T deprecated.Int96 `parquet:"t"`
	}
	var buf bytes.Buffer
	w := pq.NewGenericWriter[row](&buf)
	_, err := w.Write([]row{{}})
	require.NoError(t, err)
	require.NoError(t, w.Close())
	f, err := Open(buf.Bytes())
	require.NoError(t, err)
	_, err = f.ReadColumn("t", 0)
	assert.EqualError(t, err, `parquet: column "t" has physical type INT96; only BOOLEAN, INT32, INT64, FLOAT, DOUBLE, BYTE_ARRAY and FIXED_LEN_BYTE_ARRAY can be read`)
	_, err = f.ReadValues("t", 0)
	assert.ErrorIs(t, err, ErrUnsupported)
	assert.ErrorContains(t, err, "column t: field t has physical type INT96")
}
