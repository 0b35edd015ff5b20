// Writes nested.parquet and nested.json (the same rows) with arrow-rs's writer
// (parquet-wasm): structs, lists of structs, lists of lists, maps, bools,
// nulls at every level, several row groups.
const arrow = require('apache-arrow');
const pq = require('parquet-wasm/node');
const fs = require('fs');
const out = process.argv[2];
const rows = [];
let s = 7;
const rnd = (n) => { s ^= s << 13; s >>>= 0; s ^= s >>> 17; s ^= s << 5; s >>>= 0; return s % n; }; // xorshift32
for (let i = 0; i < 40; i++) {
  const meta = rnd(5) === 0 ? null : { func_name: rnd(3) === 0 ? null : 'f' + i, n: i * 3 - 50, ok: i % 2 === 0 };
  let tests = null;
  if (rnd(6) !== 0) {
    tests = [];
    for (let k = rnd(4); k > 0; k--) tests.push(rnd(7) === 0 ? null : { input: 'in' + i + '_' + k, output: rnd(5) === 0 ? null : 'out' + k, testtype: 'functional' });
  }
  let grid = null;
  if (rnd(5) !== 0) {
    grid = [];
    for (let a = rnd(3); a > 0; a--) {
      if (rnd(6) === 0) { grid.push(null); continue; }
      const r = [];
      for (let b = rnd(4); b > 0; b--) r.push(rnd(8) === 0 ? null : rnd(1000) - 500);
      grid.push(r);
    }
  }
  const flags = rnd(4) === 0 ? null : Array.from({ length: rnd(4) }, () => rnd(5) === 0 ? null : rnd(2) === 1);
  const score = rnd(4) === 0 ? null : (rnd(100000) - 50000) / 64;
  const info = rnd(6) === 0 ? null : { a: rnd(4) === 0 ? null : { b: rnd(3) === 0 ? null : Array.from({ length: rnd(3) }, (_, j) => 'é' + j + '\u00a0') }, c: rnd(3) === 0 ? null : rnd(100) / 4 };
  rows.push({ id: i, meta, tests, grid, flags, score, info });
}
fs.writeFileSync(out + '/nested.json', JSON.stringify(rows, null, 0));
const F = (n, t, nl = true) => new arrow.Field(n, t, nl);
const metaT = new arrow.Struct([F('func_name', new arrow.Utf8()), F('n', new arrow.Int32()), F('ok', new arrow.Bool())]);
const testT = new arrow.Struct([F('input', new arrow.Utf8()), F('output', new arrow.Utf8()), F('testtype', new arrow.Utf8())]);
const testsT = new arrow.List(F('element', testT));
const gridT = new arrow.List(F('element', new arrow.List(F('element', new arrow.Int64()))));
const flagsT = new arrow.List(F('element', new arrow.Bool()));
const infoT = new arrow.Struct([F('a', new arrow.Struct([F('b', new arrow.List(F('element', new arrow.Utf8())))])), F('c', new arrow.Float32())]);
const big = (g) => g === null ? null : g.map(r => r === null ? null : r.map(x => x === null ? null : BigInt(x)));
const t = new arrow.Table({
  id: arrow.vectorFromArray(rows.map(r => BigInt(r.id)), new arrow.Int64()),
  meta: arrow.vectorFromArray(rows.map(r => r.meta), metaT),
  tests: arrow.vectorFromArray(rows.map(r => r.tests), testsT),
  grid: arrow.vectorFromArray(rows.map(r => big(r.grid)), gridT),
  flags: arrow.vectorFromArray(rows.map(r => r.flags), flagsT),
  score: arrow.vectorFromArray(rows.map(r => r.score), new arrow.Float64()),
  info: arrow.vectorFromArray(rows.map(r => r.info), infoT),
});
const b = new pq.WriterPropertiesBuilder().setCompression(pq.Compression.SNAPPY).setMaxRowGroupSize(16);
fs.writeFileSync(out + '/nested.parquet', pq.writeParquet(pq.Table.fromIPCStream(arrow.tableToIPC(t, 'stream')), b.build()));
