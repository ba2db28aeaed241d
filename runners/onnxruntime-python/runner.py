"""dnncost's bundled runner in Python: measures ONNX models with ONNX Runtime (the onnxruntime
package, CPU execution provider) on this machine, for hosts without Node.js. It speaks the dnncost
runner protocol (docs/measure.md) and takes the options of runners/onnxruntime/run, with the same
meaning:

  run [--optimization disabled|basic|extended|all] [--threads N] [--seed S] [--keep-sessions K]

Its input data are those of the Node runner (the same generator, seeds and scales), so the two
runners feed a model the same numbers.
"""
import json
import os
import platform
import re
import shutil
import socket
import sys
import tempfile
import time
from collections import OrderedDict

USAGE = 'usage: run [--optimization disabled|basic|extended|all] [--threads N] [--seed S] [--keep-sessions K]\n'


def usage(message):
    sys.stderr.write(f'run: {message}\n' + USAGE)
    sys.exit(2)


def parse_args(argv):
    opt = {'optimization': 'all', 'threads': 1, 'seed': 0, 'keep_sessions': 32}
    i = 0
    while i < len(argv):
        a = argv[i]

        def value():
            nonlocal i
            if i + 1 >= len(argv):
                usage(f'{a} needs a value')
            i += 1
            return argv[i]

        if a == '--optimization':
            opt['optimization'] = value()
            if opt['optimization'] not in ('disabled', 'basic', 'extended', 'all'):
                usage(f"unknown optimization level '{opt['optimization']}'")
        elif a == '--threads':
            v = value()
            if not re.fullmatch(r'[1-9][0-9]{0,3}', v):
                usage(f"--threads must be a positive integer, got '{v}'")
            opt['threads'] = int(v)
        elif a == '--seed':
            v = value()
            if not re.fullmatch(r'[0-9]{1,9}', v):
                usage(f"--seed must be an integer in [0, 999999999], got '{v}'")
            opt['seed'] = int(v)
        elif a == '--keep-sessions':
            v = value()
            if not re.fullmatch(r'[0-9]{1,4}', v):
                usage(f"--keep-sessions must be an integer in [0, 9999], got '{v}'")
            opt['keep_sessions'] = int(v)
        elif a in ('--help', '-h'):
            sys.stdout.write(USAGE[len('usage: '):])
            sys.exit(0)
        else:
            usage(f"unknown argument '{a}'")
        i += 1
    return opt


options = parse_args(sys.argv[1:])

try:
    import numpy as np
    import onnxruntime as ort
except ImportError as e:
    sys.stderr.write(f'run: cannot load onnxruntime or numpy ({e}); install them with '
                     "'python3 -m pip install onnxruntime'\n")
    sys.exit(3)


def send(obj):
    sys.stdout.write(json.dumps(obj, separators=(',', ':')) + '\n')
    sys.stdout.flush()


def cpu_model():
    try:
        with open('/proc/cpuinfo') as f:
            m = re.search(r'^model name\s*:\s*(.*)$', f.read(), re.M)
            if m:
                return m.group(1).strip()
    except OSError:
        pass
    return platform.processor() or 'unknown'


# Linux: writing 5 to /proc/self/clear_refs resets the peak resident set size (VmHWM) to the
# current one, so the peak of one request can be read from /proc/self/status afterwards.
def status_kb(field):
    try:
        with open('/proc/self/status') as f:
            m = re.search(rf'^{field}:\s*(\d+) kB', f.read(), re.M)
            return int(m.group(1)) if m else None
    except OSError:
        return None


def reset_peak():
    try:
        with open('/proc/self/clear_refs', 'w') as f:
            f.write('5')
        return True
    except OSError:
        return False


peak_memory_supported = reset_peak() and status_kb('VmHWM') is not None

send({'device': {
    'runtime': 'onnxruntime',
    'version': ort.__version__,
    'execution_provider': 'cpu',
    'optimization': options['optimization'],
    'threads': options['threads'],
    'cpu': cpu_model(),
    'logical_cpus': os.cpu_count(),
    'host': socket.gethostname(),
    'python': platform.python_version(),
    'peak_memory': 'VmHWM growth over the resident set at session creation' if peak_memory_supported
    else 'unavailable',
}})

M32 = 0xFFFFFFFF


def uniform(seed, count):
    """`count` numbers in [0, 1) of the Node runner's generator (mulberry32) from `seed`: its
    state after k draws is seed + k * 0x6d2b79f5, so all draws are computed at once."""
    with np.errstate(over='ignore'):
        a = (np.uint32(seed) + np.arange(1, count + 1, dtype=np.uint64).astype(np.uint32) * np.uint32(0x6d2b79f5))
        t = a.astype(np.uint32)
        t = (t ^ (t >> np.uint32(15))) * (t | np.uint32(1))
        t ^= t + (t ^ (t >> np.uint32(7))) * (t | np.uint32(61))
        t = t ^ (t >> np.uint32(14))
    return t.astype(np.float64) / 4294967296.0


def hash_string(s):
    """FNV-1a over UTF-16 code units, as the Node runner hashes a JavaScript string."""
    h = 2166136261
    units = s.encode('utf-16-le')
    for k in range(0, len(units), 2):
        h = ((h ^ (units[k] | units[k + 1] << 8)) * 16777619) & M32
    return h


def input_range(name, shape):
    """Values of a sensible scale for an input (see the Node runner): variances positive, scales
    near 1, small biases, weights of variance 1 / fan-in."""
    n = name.lower()
    if len(shape) <= 1:
        if 'var' in n:
            return 0.5, 1.5
        if re.search('scale|gamma', n):
            return 0.9, 1.1
        if len(shape) == 1 and 'weight' in n:
            return 0.9, 1.1
        return -0.1, 0.1
    fan_in = 1
    for d in shape[1:]:
        fan_in *= d
    a = (3 / max(1, fan_in)) ** 0.5
    return -a, a


ELEMENT_TYPES = {
    'tensor(float)': np.float32, 'tensor(double)': np.float64, 'tensor(int8)': np.int8,
    'tensor(uint8)': np.uint8, 'tensor(int16)': np.int16, 'tensor(uint16)': np.uint16,
    'tensor(int32)': np.int32, 'tensor(uint32)': np.uint32, 'tensor(int64)': np.int64,
    'tensor(uint64)': np.uint64, 'tensor(bool)': np.bool_,
}


def make_feeds(session, model):
    feeds = {}
    for arg in session.get_inputs():
        dtype = ELEMENT_TYPES.get(arg.type)
        if dtype is None:
            raise ValueError(f"input '{arg.name}' has unsupported element type {arg.type}")
        # unknown or symbolic dimensions (batch) become 1
        shape = [d if isinstance(d, int) and d > 0 else 1 for d in (arg.shape or [])]
        count = 1
        for d in shape:
            count *= d
        seed = (hash_string(model + '\0' + arg.name) ^ options['seed']) & M32
        if dtype in (np.float32, np.float64):
            lo, hi = input_range(arg.name, shape)
            data = (lo + (hi - lo) * uniform(seed, count)).astype(dtype)
        elif dtype is np.bool_:
            data = uniform(seed, count) < 0.5
        else:  # integer inputs (indices, shapes) stay zero: the only value valid for every use
            data = np.zeros(count, dtype=dtype)
        feeds[arg.name] = data.reshape(shape)
    return feeds


LEVELS = {'disabled': 'ORT_DISABLE_ALL', 'basic': 'ORT_ENABLE_BASIC', 'extended': 'ORT_ENABLE_EXTENDED',
          'all': 'ORT_ENABLE_ALL'}


def session_options(profile=None):
    so = ort.SessionOptions()
    so.graph_optimization_level = getattr(ort.GraphOptimizationLevel, LEVELS[options['optimization']])
    so.intra_op_num_threads = options['threads']
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.log_severity_level = 3
    if profile:
        so.enable_profiling = True
        so.profile_file_prefix = os.path.join(profile['dir'], 'profile')
        so.optimized_model_filepath = profile['optimized_model']
    return so


def create_session(model, profile=None):
    return ort.InferenceSession(model, sess_options=session_options(profile), providers=['CPUExecutionProvider'])


def check_count(value, what):
    # JSON has one number type: 5.0 is the integer 5, as in the Node runner
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0 or value > 1000000:
        raise ValueError(f'"{what}" must be an integer in [0, 10^6]')
    return value


def file_stamp(path):
    """What identifies one version of a model file: a rewritten file gets a fresh session."""
    st = os.stat(path)
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


def timed_runs(session, feeds, warmup, repeats):
    for _ in range(warmup):
        session.run(None, feeds)
    latency = []
    for _ in range(repeats):
        t0 = time.perf_counter_ns()
        session.run(None, feeds)
        latency.append((time.perf_counter_ns() - t0) / 1e6)
    return latency


def optimized_model_path(model):
    """The optimised graph of a profiled request, beside its model: m.onnx -> m.optimized.onnx."""
    stem, _ = os.path.splitext(model)
    return stem + '.optimized.onnx'


def profile_kernels(file, repeats):
    """The kernels of the last `repeats` runs of ONNX Runtime's profile (a Chrome trace: "Node"
    events named "<node>_kernel_time", the operator in args.op_name, durations in microseconds),
    each node's time in its fastest run (of those it ran in), in execution order; runs are told
    apart by their "model_run" events. The fastest run, as the harness takes a network's fastest
    round: a mean takes in the runs the profiler's bookkeeping or the host interrupted."""
    with open(file) as f:
        events = json.load(f)
    if not isinstance(events, list):
        raise ValueError(f'profile {file} is not a JSON array')
    runs = sorted((e for e in events if isinstance(e, dict) and e.get('cat') == 'Session'
                   and e.get('name') == 'model_run'), key=lambda e: e['ts'])[-repeats:]
    if not runs:
        raise ValueError(f'profile {file} has no model_run event')
    suffix = '_kernel_time'
    by_node = OrderedDict()
    for e in events:
        if not isinstance(e, dict) or e.get('cat') != 'Node' or not str(e.get('name', '')).endswith(suffix):
            continue
        ts = e.get('ts', 0)
        run = next((i for i, r in enumerate(runs) if r['ts'] <= ts <= r['ts'] + r['dur']), None)
        if run is None:
            continue
        name = e['name'][:-len(suffix)]
        k = by_node.get(name)
        if k is None:
            k = by_node[name] = {'name': name, 'op': (e.get('args') or {}).get('op_name', ''), 'us': {}, 'first': ts}
        k['us'][run] = k['us'].get(run, 0.0) + float(e.get('dur', 0))  # a node run twice in one run: both
    ordered = sorted(by_node.values(), key=lambda k: k['first'])
    return [{'name': k['name'], 'op': k['op'], 'ms': min(k['us'].values()) / 1000} for k in ordered]


kept = OrderedDict()  # sessions kept for their model's next request, least recently used first
primed = False


def measure_profiled(request, model, warmup, repeats):
    """A profiled request gets a session of its own, neither kept nor taken from those kept: the
    profiler is switched on when a session is created, and it slows every run it records."""
    tmp = tempfile.mkdtemp(prefix='dnncost-profile-')
    optimized = optimized_model_path(model)
    if os.path.exists(optimized):  # an earlier request's file must not pass for this one's
        os.remove(optimized)
    try:
        session = create_session(model, {'dir': tmp, 'optimized_model': optimized})
        latency = timed_runs(session, make_feeds(session, request['model']), warmup, repeats)
        profile = session.end_profiling()
        if not profile or not os.path.exists(profile):
            files = [f for f in os.listdir(tmp) if f.endswith('.json')]
            if len(files) != 1:
                raise ValueError(f'ONNX Runtime wrote {len(files)} profile files, expected 1')
            profile = os.path.join(tmp, files[0])
        answer = {'id': request.get('id'), 'latency_ms': latency, 'kernels': profile_kernels(profile, repeats)}
        if os.path.exists(optimized):
            answer['optimized_model'] = optimized
        del session
        return answer
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def measure(request):
    global primed
    model = request.get('model')
    if not isinstance(model, str) or model == '':
        raise ValueError('"model" must be a file path')
    warmup = check_count(request.get('warmup', 0), 'warmup')
    repeats = check_count(request.get('repeats', 1), 'repeats')
    if repeats < 1:
        raise ValueError('"repeats" must be at least 1')
    for flag in ('keep', 'profile'):
        if flag in request and not isinstance(request[flag], bool):
            raise ValueError(f'"{flag}" must be true or false')
    if not os.path.exists(model):
        raise ValueError(f'no such model file: {model}')
    resolved = os.path.abspath(model)
    if not primed:
        # The first session of a process also sets up ONNX Runtime itself (thread pools, kernel
        # registries): done once, unmeasured, so that it is not charged to the first model.
        first = create_session(resolved)
        first.run(None, make_feeds(first, model))
        del first
        primed = True
    if request.get('profile') is True:
        return measure_profiled(request, resolved, warmup, repeats)
    stamp = file_stamp(resolved)
    entry = kept.pop(resolved, None)
    if entry is not None and entry['stamp'] != stamp:
        entry = None  # the file changed since its session was kept: load the new one
    if entry is None:
        rss_before = status_kb('VmRSS') if peak_memory_supported else None
        if peak_memory_supported:
            reset_peak()
        entry = {'session': create_session(resolved), 'stamp': stamp, 'feeds': None, 'peak': None}
        fresh = True
    else:
        fresh = False
    if entry['feeds'] is None:
        entry['feeds'] = make_feeds(entry['session'], model)
    latency = timed_runs(entry['session'], entry['feeds'], warmup, repeats)
    if fresh and peak_memory_supported:
        hwm = status_kb('VmHWM')
        if hwm is not None and rss_before is not None:
            entry['peak'] = max(0, hwm - rss_before) * 1024
    answer = {'id': request.get('id'), 'latency_ms': latency}
    # a kept session answers with the peak measured when it was created: its runs reuse its arena
    if entry['peak'] is not None:
        answer['peak_memory_bytes'] = entry['peak']
    if request.get('keep') is True and options['keep_sessions'] > 0:
        kept[resolved] = entry
        while len(kept) > options['keep_sessions']:
            kept.popitem(last=False)
    return answer


def main():
    for line in sys.stdin:
        if line.strip() == '':
            continue
        try:
            request = json.loads(line)
            if not isinstance(request, dict):
                raise ValueError('not a JSON object')
        except ValueError as e:
            send({'id': None, 'error': f'malformed request: {e}'})
            continue
        try:
            send(measure(request))
        except Exception as e:  # every failure of one model is an answer; the runner goes on
            send({'id': request.get('id'), 'error': (str(e) or type(e).__name__).split('\n')[0]})


main()
