// dnncost's bundled runner: measures ONNX models with ONNX Runtime (onnxruntime-node, CPU
// execution provider) on this machine. It speaks the dnncost runner protocol (docs/measure.md):
// JSON Lines on stdin/stdout, one request per line, one answer per line, a device line first.
//
//   run [--optimization disabled|basic|extended|all] [--threads N] [--seed S] [--keep-sessions K]
//
// A request creates an inference session and releases it afterwards, unless it says "keep": then
// the session stays for the model's next request (at most K sessions, the least recently used
// released first). Creating a session is most of a round's cost besides its runs, and the
// fastest runs of a kept session repeat as well as fresh sessions' (docs/measure.md). A request
// with "profile": true gets a session of its own with ONNX Runtime's profiler on, and its answer
// adds the executed kernels and the optimised graph written beside the model.
'use strict';

const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const readline = require('node:readline');

function usage(message) {
  process.stderr.write(`run: ${message}\n` +
    'usage: run [--optimization disabled|basic|extended|all] [--threads N] [--seed S] [--keep-sessions K]\n');
  process.exit(2);
}

function parseArgs(argv) {
  const opt = { optimization: 'all', threads: 1, seed: 0, keepSessions: 32 };
  for (let i = 0; i < argv.length; ++i) {
    const a = argv[i];
    const value = () => {
      if (i + 1 >= argv.length) usage(`${a} needs a value`);
      return argv[++i];
    };
    if (a === '--optimization') {
      opt.optimization = value();
      if (!['disabled', 'basic', 'extended', 'all'].includes(opt.optimization))
        usage(`unknown optimization level '${opt.optimization}'`);
    } else if (a === '--threads') {
      const v = value();
      if (!/^[1-9][0-9]{0,3}$/.test(v)) usage(`--threads must be a positive integer, got '${v}'`);
      opt.threads = Number(v);
    } else if (a === '--seed') {
      const v = value();
      if (!/^[0-9]{1,9}$/.test(v)) usage(`--seed must be an integer in [0, 999999999], got '${v}'`);
      opt.seed = Number(v);
    } else if (a === '--keep-sessions') {
      const v = value();
      if (!/^[0-9]{1,4}$/.test(v)) usage(`--keep-sessions must be an integer in [0, 9999], got '${v}'`);
      opt.keepSessions = Number(v);
    } else if (a === '--help' || a === '-h') {
      process.stdout.write('run [--optimization disabled|basic|extended|all] [--threads N] [--seed S] [--keep-sessions K]\n');
      process.exit(0);
    } else {
      usage(`unknown argument '${a}'`);
    }
  }
  return opt;
}

const options = parseArgs(process.argv.slice(2));

let ort;
try {
  ort = require('onnxruntime-node');
} catch (e) {
  process.stderr.write('run: cannot load onnxruntime-node (' + e.message.split('\n')[0] + '); install it with ' +
    `'npm ci --ignore-scripts' in ${__dirname} (scripts/deps.sh does)\n`);
  process.exit(3);
}
const ortVersion = require('onnxruntime-node/package.json').version;

function cpuModel() {
  try {
    const m = /^model name\s*:\s*(.*)$/m.exec(fs.readFileSync('/proc/cpuinfo', 'utf8'));
    if (m) return m[1].trim();
  } catch (_) { /* not Linux */ }
  const cpus = os.cpus();
  return cpus.length ? cpus[0].model : 'unknown';
}

// Linux: writing 5 to /proc/self/clear_refs resets the peak resident set size (VmHWM) to the
// current one, so the peak of one request can be read from /proc/self/status afterwards.
function statusKb(field) {
  try {
    const m = new RegExp(`^${field}:\\s*(\\d+) kB`, 'm').exec(fs.readFileSync('/proc/self/status', 'utf8'));
    return m ? Number(m[1]) : null;
  } catch (_) {
    return null;
  }
}
function resetPeak() {
  try {
    fs.writeFileSync('/proc/self/clear_refs', '5');
    return true;
  } catch (_) {
    return false;
  }
}
const peakMemorySupported = resetPeak() && statusKb('VmHWM') !== null;

function send(obj) {
  process.stdout.write(JSON.stringify(obj) + '\n');
}

send({
  device: {
    runtime: 'onnxruntime',
    version: ortVersion,
    execution_provider: 'cpu',
    optimization: options.optimization,
    threads: options.threads,
    cpu: cpuModel(),
    logical_cpus: os.cpus().length,
    host: os.hostname(),
    node: process.version,
    peak_memory: peakMemorySupported ? 'VmHWM growth over the resident set at session creation' : 'unavailable',
  },
});

// A small seeded generator (mulberry32): inputs are the same for every run of the same model.
function generator(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
function hashString(s) {
  let h = 2166136261;
  for (let i = 0; i < s.length; ++i) h = Math.imul(h ^ s.charCodeAt(i), 16777619);
  return h >>> 0;
}

// Random data of a sensible scale for an input. dnncost's exports carry their weights as
// initializers, but a model from elsewhere may take weights as graph inputs, so the values must
// keep activations finite and normal (no overflow, no subnormals): variances positive, scales
// near 1, small biases, and weights of variance 1 / fan-in.
function inputRange(name, shape) {
  const n = name.toLowerCase();
  if (shape.length <= 1) {
    if (/var/.test(n)) return [0.5, 1.5];
    if (/scale|gamma/.test(n)) return [0.9, 1.1];
    if (shape.length === 1 && /weight/.test(n)) return [0.9, 1.1];
    return [-0.1, 0.1];
  }
  let fanIn = 1;
  for (let i = 1; i < shape.length; ++i) fanIn *= shape[i];
  const a = Math.sqrt(3 / Math.max(1, fanIn));
  return [-a, a];
}

const typedArrays = {
  float32: Float32Array, float64: Float64Array, int8: Int8Array, uint8: Uint8Array, int16: Int16Array,
  uint16: Uint16Array, int32: Int32Array, uint32: Uint32Array, int64: BigInt64Array, uint64: BigUint64Array,
  bool: Uint8Array,
};

function makeFeeds(session, modelPath) {
  const feeds = {};
  const metadata = session.inputMetadata;
  session.inputNames.forEach((name, k) => {
    const md = metadata[k];
    if (!md || !md.isTensor) throw new Error(`input '${name}' is not a tensor`);
    // unknown or symbolic dimensions (batch) become 1
    const shape = md.shape.map((d) => (typeof d === 'number' && d > 0 ? d : 1));
    const count = shape.reduce((a, b) => a * b, 1);
    const Array_ = typedArrays[md.type];
    if (!Array_) throw new Error(`input '${name}' has unsupported element type ${md.type}`);
    const data = new Array_(count);
    const rand = generator(hashString(modelPath + '\0' + name) ^ options.seed);
    if (md.type === 'float32' || md.type === 'float64') {
      const [lo, hi] = inputRange(name, shape);
      for (let i = 0; i < count; ++i) data[i] = lo + (hi - lo) * rand();
    } else if (md.type === 'bool') {
      for (let i = 0; i < count; ++i) data[i] = rand() < 0.5 ? 1 : 0;
    }  // integer inputs (indices, shapes) stay zero: the only value valid for every use
    feeds[name] = new ort.Tensor(md.type, data, shape);
  });
  return feeds;
}

function sessionOptions(profile) {
  const o = {
    graphOptimizationLevel: options.optimization,
    intraOpNumThreads: options.threads,
    interOpNumThreads: 1,
    executionMode: 'sequential',
    logSeverityLevel: 3,
  };
  if (profile) {
    o.enableProfiling = true;
    o.profileFilePrefix = path.join(profile.dir, 'profile');
    o.optimizedModelFilePath = profile.optimizedModel;
  }
  return o;
}

// The optimised graph of a profiled request is written beside its model, so that the caller
// can map the profile's node names to tensors: model.onnx -> model.optimized.onnx.
function optimizedModelPath(model) {
  const parsed = path.parse(model);
  return path.join(parsed.dir, `${parsed.name}.optimized.onnx`);
}

// The kernels of the last `repeats` runs in ONNX Runtime's profile (a Chrome trace: one "Node"
// event per kernel execution, named "<node>_kernel_time", its operator in args.op_name, its
// duration in microseconds), each node's time in its fastest run (of those it ran in), in
// execution order. Runs are told apart by their "model_run" events, so warm-up runs are left
// out. The fastest run, as the harness takes a network's fastest round: a mean takes in the runs
// the profiler's own bookkeeping or the host interrupted, and moves from one profile to the next.
function profileKernels(file, repeats) {
  const events = JSON.parse(fs.readFileSync(file, 'utf8'));
  if (!Array.isArray(events)) throw new Error(`profile ${file} is not a JSON array`);
  const runs = events.filter((e) => e && e.cat === 'Session' && e.name === 'model_run')
    .sort((a, b) => a.ts - b.ts).slice(-repeats);
  if (runs.length === 0) throw new Error(`profile ${file} has no model_run event`);
  const runOf = (e) => runs.findIndex((r) => e.ts >= r.ts && e.ts <= r.ts + r.dur);
  const suffix = '_kernel_time';
  const byNode = new Map();
  for (const e of events) {
    if (!e || e.cat !== 'Node' || typeof e.name !== 'string' || !e.name.endsWith(suffix)) continue;
    const run = runOf(e);
    if (run < 0) continue;
    const name = e.name.slice(0, -suffix.length);
    let k = byNode.get(name);
    if (!k) {
      k = { name, op: (e.args && e.args.op_name) || '', us: new Array(runs.length).fill(null), first: e.ts };
      byNode.set(name, k);
    }
    k.us[run] = (k.us[run] || 0) + (Number(e.dur) || 0);  // a node that runs twice in one run: both executions
  }
  return [...byNode.values()].sort((a, b) => a.first - b.first)
    .map((k) => ({ name: k.name, op: k.op, ms: Math.min(...k.us.filter((us) => us !== null)) / 1000 }));
}

function checkCount(value, what) {
  if (!Number.isInteger(value) || value < 0 || value > 1000000) throw new Error(`"${what}" must be an integer in [0, 10^6]`);
  return value;
}

// Sessions kept for their model's next request, by model path, least recently used first.
const kept = new Map();
// What identifies one version of a model file: a rewritten file gets a fresh session.
function fileStamp(file) {
  const st = fs.statSync(file);
  return `${st.dev}:${st.ino}:${st.size}:${st.mtimeMs}`;
}

// `warmup` untimed runs, then the milliseconds of each of `repeats` timed runs.
async function timedRuns(session, feeds, warmup, repeats) {
  for (let i = 0; i < warmup; ++i) await session.run(feeds);
  const latency = new Array(repeats);
  for (let i = 0; i < repeats; ++i) {
    const t0 = process.hrtime.bigint();
    await session.run(feeds);
    latency[i] = Number(process.hrtime.bigint() - t0) / 1e6;
  }
  return latency;
}

let primed = false;
async function measure(request) {
  const model = request.model;
  if (typeof model !== 'string' || model === '') throw new Error('"model" must be a file path');
  const warmup = checkCount(request.warmup ?? 0, 'warmup');
  const repeats = checkCount(request.repeats ?? 1, 'repeats');
  if (repeats < 1) throw new Error('"repeats" must be at least 1');
  if (request.keep !== undefined && typeof request.keep !== 'boolean') throw new Error('"keep" must be true or false');
  if (request.profile !== undefined && typeof request.profile !== 'boolean') throw new Error('"profile" must be true or false');
  if (!fs.existsSync(model)) throw new Error(`no such model file: ${model}`);

  if (!primed) {
    // The first session of a process also sets up ONNX Runtime itself (thread pools, kernel
    // registries): done once, unmeasured, so that it is not charged to the first model.
    const first = await ort.InferenceSession.create(path.resolve(model), sessionOptions());
    try {
      await first.run(makeFeeds(first, model));
    } finally {
      await first.release();
    }
    primed = true;
  }
  const resolved = path.resolve(model);
  if (request.profile === true) return measureProfiled(request, resolved, warmup, repeats);
  const stamp = fileStamp(resolved);
  let entry = kept.get(resolved);
  if (entry) {
    kept.delete(resolved);
    if (entry.stamp !== stamp) {
      // the file changed since its session was kept: load the new one
      await entry.session.release();
      entry = undefined;
    }
  }
  let peak;
  if (!entry) {
    const rssBefore = peakMemorySupported ? statusKb('VmRSS') : null;
    if (peakMemorySupported) resetPeak();
    entry = { session: await ort.InferenceSession.create(resolved, sessionOptions()), stamp, feeds: null, peak: null };
    peak = () => {
      const hwm = peakMemorySupported ? statusKb('VmHWM') : null;
      if (hwm !== null && rssBefore !== null) entry.peak = Math.max(0, hwm - rssBefore) * 1024;
    };
  }
  let keep = false;
  try {
    const session = entry.session;
    if (!entry.feeds) entry.feeds = makeFeeds(session, model);
    const feeds = entry.feeds;
    const latency = await timedRuns(session, feeds, warmup, repeats);
    if (peak) peak();
    const answer = { id: request.id, latency_ms: latency };
    // a kept session answers with the peak measured when it was created: its runs reuse its arena
    if (entry.peak !== null) answer.peak_memory_bytes = entry.peak;
    keep = request.keep === true && options.keepSessions > 0;
    return answer;
  } finally {
    if (keep) {
      kept.set(resolved, entry);
      for (const [oldest, e] of kept) {
        if (kept.size <= options.keepSessions) break;
        kept.delete(oldest);
        await e.session.release();
      }
    } else {
      await entry.session.release();
    }
  }
}

// A profiled request gets a session of its own, neither kept nor taken from those kept: the
// profiler is switched on when a session is created, and it slows every run it records.
async function measureProfiled(request, model, warmup, repeats) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dnncost-profile-'));
  const optimizedModel = optimizedModelPath(model);
  // an earlier request's file must not pass for this one's
  fs.rmSync(optimizedModel, { force: true });
  try {
    const session = await ort.InferenceSession.create(model, sessionOptions({ dir, optimizedModel }));
    try {
      const feeds = makeFeeds(session, request.model);
      const latency = await timedRuns(session, feeds, warmup, repeats);
      session.endProfiling();
      const files = fs.readdirSync(dir).filter((f) => f.endsWith('.json'));
      if (files.length !== 1) throw new Error(`ONNX Runtime wrote ${files.length} profile files, expected 1`);
      const kernels = profileKernels(path.join(dir, files[0]), repeats);
      const answer = { id: request.id, latency_ms: latency, kernels };
      if (fs.existsSync(optimizedModel)) answer.optimized_model = optimizedModel;
      return answer;
    } finally {
      await session.release();
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

// Requests are served one at a time, in order: dnncost sends the next one only after the answer.
let chain = Promise.resolve();
const lines = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
lines.on('line', (line) => {
  if (line.trim() === '') return;
  chain = chain.then(async () => {
    let request;
    try {
      request = JSON.parse(line);
      if (request === null || typeof request !== 'object' || Array.isArray(request)) throw new Error('not a JSON object');
    } catch (e) {
      send({ id: null, error: `malformed request: ${e.message}` });
      return;
    }
    try {
      send(await measure(request));
    } catch (e) {
      send({ id: request.id ?? null, error: String(e && e.message ? e.message : e).split('\n')[0] });
    }
  });
});
lines.on('close', () => {
  chain.then(() => process.exit(0));
});
