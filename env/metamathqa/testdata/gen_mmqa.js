// Writes MetaMathQA-shaped parquet files (query, response, type: strings)
// from the first 200 rows of a JSON Lines file, with parquet-wasm
// (arrow-rs), in several codec / encoding / page-version combinations.
const arrow = require('apache-arrow');
const pq = require('parquet-wasm/node');
const fs = require('fs');
const [src, out] = process.argv.slice(2);
const rows = fs.readFileSync(src, 'utf8').split('\n').filter(l => l.trim()).slice(0, 200).map(l => JSON.parse(l));
fs.writeFileSync(out + '/mmqa_rows.jsonl', rows.map(r => JSON.stringify(r)).join('\n') + '\n');
function table(rows) {
  const col = (k) => arrow.vectorFromArray(rows.map(r => r[k] === undefined ? null : r[k]), new arrow.Utf8());
  return pq.Table.fromIPCStream(arrow.tableToIPC(new arrow.Table({ query: col('query'), response: col('response'), type: col('type') }), 'stream'));
}
function write(name, rows, f) {
  fs.writeFileSync(out + '/' + name, pq.writeParquet(table(rows), f(new pq.WriterPropertiesBuilder()).build()));
}
write('mmqa_snappy_dict.parquet', rows, b => b.setCompression(pq.Compression.SNAPPY).setMaxRowGroupSize(64));
write('mmqa_plain.parquet', rows, b => b.setCompression(pq.Compression.UNCOMPRESSED).setDictionaryEnabled(false));
write('mmqa_v2_gzip.parquet', rows, b => b.setCompression(pq.Compression.GZIP).setWriterVersion(pq.WriterVersion.V2));
write('mmqa_null_response.parquet', [{ query: 'q1', response: 'The answer is: 1', type: 't' }, { query: 'q2', type: 't' }], b => b.setCompression(pq.Compression.SNAPPY));
console.log('ok', rows.length);
