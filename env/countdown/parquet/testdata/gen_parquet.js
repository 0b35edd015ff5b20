const arrow = require('apache-arrow');
const pq = require('parquet-wasm/node');
const fs = require('fs');
const out = process.argv[2];
// Deterministic Countdown-like rows (LCG), some multiplication-only.
let s = 12345;
const rnd = (n) => { s = (s * 1103515245 + 12345) % 2147483648; return s % n; };
const rows = [];
for (let i = 0; i < 300; i++) {
  const k = 3 + rnd(2);
  const nums = [];
  for (let j = 0; j < k; j++) nums.push(1 + rnd(99));
  let target;
  if (i % 3 == 0) target = nums.reduce((a, b) => a * b, 1) % 1000 + 1; // likely not ±-solvable
  else { target = 0; for (const x of nums) target += (rnd(2) ? x : -x); target = Math.abs(target); }
  rows.push({ target, nums });
}
fs.writeFileSync(out + '/tasks.json', JSON.stringify(rows));
function table(rows, nullable) {
  const listType = new arrow.List(new arrow.Field('element', new arrow.Int64(), true));
  const nums = arrow.vectorFromArray(rows.map(r => r.nums === null ? null : r.nums.map(BigInt)), listType);
  const target = arrow.vectorFromArray(rows.map(r => BigInt(r.target)), new arrow.Int64());
  return pq.Table.fromIPCStream(arrow.tableToIPC(new arrow.Table({ target, nums }), 'stream'));
}
function write(name, rows, f) {
  let b = new pq.WriterPropertiesBuilder();
  b = f(b);
  fs.writeFileSync(out + '/' + name, pq.writeParquet(table(rows), b.build()));
}
write('snappy_dict.parquet', rows, b => b.setCompression(pq.Compression.SNAPPY).setMaxRowGroupSize(128));
write('plain_uncompressed.parquet', rows, b => b.setCompression(pq.Compression.UNCOMPRESSED).setDictionaryEnabled(false));
write('gzip_dict.parquet', rows, b => b.setCompression(pq.Compression.GZIP));
write('snappy_v2.parquet', rows, b => b.setCompression(pq.Compression.SNAPPY).setWriterVersion(pq.WriterVersion.V2).setMaxRowGroupSize(100));
write('zstd.parquet', rows.slice(0, 10), b => b.setCompression(pq.Compression.ZSTD));
const odd = [{ target: 5, nums: [2, 3] }, { target: 7, nums: [] }, { target: 1, nums: null }];
write('null_nums.parquet', odd, b => b.setCompression(pq.Compression.SNAPPY));
console.log('ok', rows.length);
