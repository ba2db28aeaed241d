// Session-option experiment (docs/measure.md, "Why measurements varied"): measures models in one process, rounds x models,
// printing one JSON line per (round, model) with the median and min of the timed runs.
'use strict';
const ort = require(require('path').join(__dirname, '../../runners/onnxruntime/node_modules/onnxruntime-node'));
const fs = require('fs');
const args = JSON.parse(process.argv[2]);
const models = args.models;
const rounds = args.rounds ?? 5, warmup = args.warmup ?? 5, repeats = args.repeats ?? 20;
function sopts() {
  const o = { graphOptimizationLevel: args.opt ?? 'all', intraOpNumThreads: 1, interOpNumThreads: 1,
    executionMode: 'sequential', logSeverityLevel: 3 };
  if (args.arena === false) o.enableCpuMemArena = false;
  if (args.pattern === false) o.enableMemPattern = false;
  const extra = {};
  if (args.spin === false) extra['session.intra_op.allow_spinning'] = '0';
  if (args.prepack === false) extra['session.disable_prepacking'] = '1';
  if (args.daz) extra['session.set_denormal_as_zero'] = '1';
  if (Object.keys(extra).length) o.extra = extra;
  return o;
}
function gen(seed) { let a = seed >>> 0; return () => { a = (a + 0x6d2b79f5) >>> 0; let t = a;
  t = Math.imul(t ^ (t >>> 15), t | 1); t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296; }; }
function feeds(s) { const f = {}; s.inputNames.forEach((name, k) => { const md = s.inputMetadata[k];
  const shape = md.shape.map((d) => (typeof d === 'number' && d > 0 ? d : 1));
  const n = shape.reduce((a, b) => a * b, 1); const d = new Float32Array(n); const r = gen(k + 1);
  for (let i = 0; i < n; ++i) d[i] = 2 * r() - 1; f[name] = new ort.Tensor('float32', d, shape); }); return f; }
(async () => {
  const keep = {};
  for (let r = 0; r < rounds; ++r) {
    for (const m of models) {
      let s = args.keep ? keep[m] : null;
      if (!s) { s = await ort.InferenceSession.create(m, sopts()); if (args.keep) keep[m] = s; }
      const f = feeds(s);
      for (let i = 0; i < warmup; ++i) await s.run(f);
      const t = [];
      for (let i = 0; i < repeats; ++i) { const t0 = process.hrtime.bigint(); await s.run(f);
        t.push(Number(process.hrtime.bigint() - t0) / 1e6); }
      t.sort((a, b) => a - b);
      process.stdout.write(JSON.stringify({ r, m: m.split('/').pop(), med: t[repeats >> 1], min: t[0] }) + '\n');
      if (!args.keep) await s.release();
      if (args.gc && global.gc) global.gc();
    }
  }
})();
