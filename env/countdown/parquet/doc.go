// Package parquet is a small column reader over github.com/parquet-go/parquet-go
// for the data files of ragen's environments (Countdown-Tasks, Hugging Face
// dataset exports, DeepCoder, MetaMathQA, ...): it reads one top-level
// column at a time, either as []Cell, a scalar or a list of scalars per row
// (ReadColumn), or as one Go value per row of any nesting: structs (Group),
// lists of lists, lists of structs (ReadValues).
//
// The library decodes everything Hugging Face's pyarrow writer produces:
// PLAIN and dictionary encodings, delta and byte-stream-split encodings,
// data pages v1 and v2, the codecs SNAPPY, GZIP, ZSTD, LZ4, BROTLI, and
// several pages and row groups per file. Physical types BOOLEAN, INT32,
// INT64 (Cell.Ints), FLOAT, DOUBLE (Cell.Floats), BYTE_ARRAY and
// FIXED_LEN_BYTE_ARRAY (Cell.Strs) are read; a column of any other shape
// (for ReadColumn: struct groups and lists of lists; for both: INT96) is an
// error naming the column and what it is. Corrupt input never panics;
// ReadAll reads at most 1 GiB.
// Footer and page-header sizes (and snappy block lengths) are checked
// against the file before the library allocates them; a corrupt RLE run
// length inside a page still makes the library reserve up to a few GiB of
// (untouched) memory before the read fails with an error.
//
// It lives under env/countdown because Countdown needed it first; other env
// packages use it too.
package parquet
