package parquet

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type task struct {
	Target int64   `json:"target"`
	Nums   []int64 `json:"nums"`
}

func open(t testing.TB, name string) *File {
	b, err := os.ReadFile(filepath.Join("testdata", name))
	require.NoError(t, err)
	f, err := Open(b)
	require.NoError(t, err)
	return f
}

// The parquet files in testdata were written by testdata/gen_parquet.js
// with parquet-wasm (the Rust arrow-rs parquet writer) from the rows in
// testdata/parquet_tasks.json: target INT64, nums list<INT64> (3-level
// LIST), in several codec / encoding / page-version combinations.
func TestReadMatchesWriterRows(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "parquet_tasks.json"))
	require.NoError(t, err)
	var want []task
	require.NoError(t, json.Unmarshal(b, &want))
	require.Len(t, want, 300)
	for _, name := range []string{"snappy_dict.parquet", "plain_uncompressed.parquet", "gzip_dict.parquet", "snappy_v2.parquet"} {
		t.Run(name, func(t *testing.T) {
			f := open(t, name)
			assert.Equal(t, []string{"target", "nums"}, f.Columns())
			assert.Equal(t, int64(300), f.NumRows())
			isList, err := f.IsList("nums")
			require.NoError(t, err)
			assert.True(t, isList)
			targets, err := f.ReadColumn("target", 0)
			require.NoError(t, err)
			nums, err := f.ReadColumn("nums", 0)
			require.NoError(t, err)
			require.Len(t, targets, 300)
			require.Len(t, nums, 300)
			for i, w := range want {
				assert.Equal(t, Cell{Ints: []int64{w.Target}}, targets[i], "row %d", i)
				assert.Equal(t, w.Nums, nums[i].Ints, "row %d", i)
				assert.False(t, nums[i].Null || nums[i].NullElem, "row %d", i)
			}
			// maxRows stops after the row group that reaches it.
			part, err := f.ReadColumn("target", 10)
			require.NoError(t, err)
			assert.GreaterOrEqual(t, len(part), 10)
		})
	}
}

func TestReadErrors(t *testing.T) {
	f := open(t, "null_nums.parquet")
	nums, err := f.ReadColumn("nums", 0)
	require.NoError(t, err)
	assert.Equal(t, []Cell{{Ints: []int64{2, 3}}, {}, {Null: true}}, nums)
	_, err = f.ReadColumn("numbers", 0)
	assert.ErrorContains(t, err, `no column "numbers" (columns: [target nums])`)
	_, err = Open([]byte("PAR1 not really PAR1"))
	assert.Error(t, err)
	_, err = Open([]byte("hello"))
	assert.ErrorContains(t, err, "no PAR1 magic")
	// A footer length beyond the file is rejected before the library
	// allocates it (it allocated 1 GiB for a one-byte change).
	b, err := os.ReadFile(filepath.Join("testdata", "null_nums.parquet"))
	require.NoError(t, err)
	b[len(b)-5] = 0x40
	_, err = Open(b)
	assert.ErrorContains(t, err, "footer length 1073")
}

// TestZstdArrowFile reads the zstd file arrow-rs wrote (the old reader
// rejected ZSTD).
func TestZstdArrowFile(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "parquet_tasks.json"))
	require.NoError(t, err)
	var want []task
	require.NoError(t, json.Unmarshal(b, &want))
	f := open(t, "zstd.parquet")
	targets, err := f.ReadColumn("target", 0)
	require.NoError(t, err)
	nums, err := f.ReadColumn("nums", 0)
	require.NoError(t, err)
	require.Len(t, targets, 10)
	for i, w := range want[:10] {
		assert.Equal(t, []int64{w.Target}, targets[i].Ints)
		assert.Equal(t, w.Nums, nums[i].Ints)
	}
}

func FuzzRead(f *testing.F) {
	for _, name := range []string{"snappy_dict.parquet", "plain_uncompressed.parquet", "snappy_v2.parquet", "null_nums.parquet", "nested.parquet"} {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		pf, err := ReadAll(bytes.NewReader(b))
		if err != nil {
			return
		}
		for _, c := range pf.Columns() {
			_, _ = pf.ReadColumn(c, 0)
			_, _ = pf.ReadValues(c, 0)
		}
	})
}

// BenchmarkReadColumns reads the nums list column with ReadColumn and with
// ReadValues.
func BenchmarkReadColumns(b *testing.B) {
	data, err := os.ReadFile(filepath.Join("testdata", "snappy_dict.parquet"))
	require.NoError(b, err)
	for _, how := range []string{"ReadColumn", "ReadValues"} {
		b.Run(how, func(b *testing.B) {
			for b.Loop() {
				f, err := Open(data)
				if err != nil {
					b.Fatal(err)
				}
				if how == "ReadColumn" {
					_, err = f.ReadColumn("nums", 0)
				} else {
					_, err = f.ReadValues("nums", 0)
				}
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func ExampleFile_ReadColumn() {
	data, _ := os.ReadFile("testdata/null_nums.parquet")
	f, _ := Open(data)
	rows, _ := f.ReadColumn("nums", 0)
	for _, r := range rows {
		fmt.Println(r.Ints, r.Null)
	}
	// Output:
	// [2 3] false
	// [] false
	// [] true
}

// TestCorruptPageSize: a page header claiming more bytes than its column
// chunk holds is an error before the library allocates the claim.
func TestCorruptPageSize(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "plain_uncompressed.parquet"))
	require.NoError(t, err)
	f, err := Open(b)
	require.NoError(t, err)
	md := f.f.Metadata().RowGroups[0].Columns[0].MetaData
	start := md.DataPageOffset
	if md.DictionaryPageOffset > 0 && md.DictionaryPageOffset < start {
		start = md.DictionaryPageOffset
	}
	// Page header (compact thrift): field 1 type, field 2
	// uncompressed_page_size, field 3 compressed_page_size, both zigzag
	// varints. Replace field 3 with 2^30.
	h := b[start:]
	require.Equal(t, byte(0x15), h[0])
	i := 2
	require.Equal(t, byte(0x15), h[i])
	for i++; h[i]&0x80 != 0; i++ {
	}
	i++
	require.Equal(t, byte(0x15), h[i])
	j := i + 1
	for ; h[j]&0x80 != 0; j++ {
	}
	huge := []byte{0x80, 0x80, 0x80, 0x80, 0x08} // zigzag(2^30) = 2^31
	mut := append(append(append([]byte{}, b[:int(start)+i+1]...), huge...), b[int(start)+j+1:]...)
	// The footer offsets after the header shift by the length change;
	// only the first column chunk is read, whose start is unchanged.
	f, err = Open(mut)
	require.NoError(t, err)
	_, err = f.ReadColumn(f.Columns()[0], 0)
	assert.ErrorContains(t, err, "claims")
}

// TestCorruptRunLengths: one corrupt byte in a run-length header of the
// levels or dictionary indices claimed up to 2^31 values, which the
// library allocated (3 GiB for each of the first two files here, 0.5 GiB
// for the third) before failing; checkPages rejects the runs first. The
// offsets were found by mutating the test files at random.
func TestCorruptRunLengths(t *testing.T) {
	for _, tc := range []struct {
		file     string
		pos      int
		val      byte
		wantText string
	}{
		{"snappy_dict.parquet", 2482, 149, "column nums: page at"},
		{"snappy_v2.parquet", 1674, 241, "column target: page at"},
		{"snappy_v2.parquet", 3482, 240, "column nums: page at"},
	} {
		b, err := os.ReadFile(filepath.Join("testdata", tc.file))
		require.NoError(t, err)
		b[tc.pos] = tc.val
		f, err := Open(b)
		require.NoError(t, err)
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		before := ms.TotalAlloc
		var errs []string
		for _, c := range f.Columns() {
			if _, err := f.ReadColumn(c, 0); err != nil {
				errs = append(errs, err.Error())
			}
		}
		runtime.ReadMemStats(&ms)
		assert.Less(t, ms.TotalAlloc-before, uint64(64<<20), "%s: allocated", tc.file)
		joined := strings.Join(errs, "\n")
		assert.Contains(t, joined, tc.wantText)
		assert.Contains(t, joined, "claim")
	}
}

// TestCorruptSchemaKind: a corrupt logical type on a leaf (MAP) made the
// library panic when asked for the column's kind; it is an error naming
// the column.
func TestCorruptSchemaKind(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "hf_zstd_dict.parquet"))
	require.NoError(t, err)
	for _, m := range [][2]int{{5010, 143}, {560, 149}, {7834, 102}, {12892, 44}} {
		b[m[0]] = byte(m[1])
	}
	f, err := Open(b)
	require.NoError(t, err)
	var errs []string
	for _, c := range f.Columns() {
		if _, err := f.ReadColumn(c, 0); err != nil {
			errs = append(errs, err.Error())
		}
	}
	assert.Contains(t, strings.Join(errs, "\n"), "corrupt schema: cannot call Kind on parquet MAP type")
}
