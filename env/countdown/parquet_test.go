package countdown

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The parquet files in testdata were written by testdata/gen_parquet.js
// with parquet-wasm (the Rust arrow-rs parquet writer) from the rows in
// testdata/parquet_tasks.json: target INT64, nums list<INT64> (3-level
// LIST), in several codec / encoding / page-version combinations.
func TestReadParquetMatchesWriterRows(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "parquet_tasks.json"))
	require.NoError(t, err)
	var want []Task
	require.NoError(t, json.Unmarshal(b, &want))
	require.Len(t, want, 300)
	for _, name := range []string{"snappy_dict.parquet", "plain_uncompressed.parquet", "gzip_dict.parquet", "snappy_v2.parquet"} {
		t.Run(name, func(t *testing.T) {
			got, err := LoadTasks(filepath.Join("testdata", name), 0)
			require.NoError(t, err)
			assert.Equal(t, want, got)
			got, err = LoadTasks(filepath.Join("testdata", name), 130)
			require.NoError(t, err)
			assert.Equal(t, want[:130], got)
		})
	}
}

func TestReadParquetErrors(t *testing.T) {
	_, err := LoadTasks(filepath.Join("testdata", "zstd.parquet"), 0)
	assert.ErrorContains(t, err, "codec ZSTD not supported")
	_, err = LoadTasks(filepath.Join("testdata", "null_nums.parquet"), 0)
	assert.ErrorContains(t, err, "row 2: nums is null")
	// The first two rows (a list and an empty list) read fine.
	got, err := LoadTasks(filepath.Join("testdata", "null_nums.parquet"), 2)
	require.NoError(t, err)
	assert.Equal(t, []Task{{5, []int{2, 3}}, {7, []int{}}}, got)
}
