// Package parquet is a minimal, pure-Go parquet reader, enough for the
// data files of upstream's text environments (Countdown-Tasks, Hugging Face
// dataset exports): flat and one-level list columns of INT32, INT64 and
// BYTE_ARRAY (strings), PLAIN and dictionary (PLAIN_DICTIONARY /
// RLE_DICTIONARY) encoded values, RLE definition and repetition levels,
// data pages v1 and v2, and the codecs UNCOMPRESSED, SNAPPY (decoded here)
// and GZIP.
//
// Anything else — other physical types, delta or byte-stream-split
// encodings, ZSTD/LZ4/BROTLI/LZO, nesting deeper than one repeated level,
// column data in other files — is an error naming what was found. Corrupt
// input never panics; a file is read into memory (at most 1 GiB) and a
// column chunk may hold at most 4M level entries.
//
// It lives under env/countdown because Countdown needed it first; it
// depends on nothing else in ragen.
package parquet
