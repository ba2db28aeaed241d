"""A stand-in for the onnxruntime Python package, enough of its API for the Python runner's tests
(runners/onnxruntime-python): sessions that load any existing file, two inputs (a float tensor
with a symbolic batch dimension and an int64 one), runs that take about a millisecond, a profile
in ONNX Runtime's Chrome-trace form and an "optimised model" copied from the model. With the
profiler on, every second run of a session is interrupted in its "pool" kernel for 40 ms, so
that a runner's kernel times show which of the runs they took.

FAKE_ORT_LOG names a file that gets one line per event: "session MODEL", "run MODEL SUM" (the
sum of the float input, to check the runner's seeded data), "release MODEL". A model file whose
name contains "broken" fails to load like a malformed model.
"""
import json
import os
import shutil
import time

import numpy as np

__version__ = '0.0.0-fake'


class GraphOptimizationLevel:
    ORT_DISABLE_ALL = 0
    ORT_ENABLE_BASIC = 1
    ORT_ENABLE_EXTENDED = 2
    ORT_ENABLE_ALL = 99


class ExecutionMode:
    ORT_SEQUENTIAL = 0
    ORT_PARALLEL = 1


class SessionOptions:
    def __init__(self):
        self.graph_optimization_level = GraphOptimizationLevel.ORT_ENABLE_ALL
        self.intra_op_num_threads = 0
        self.inter_op_num_threads = 0
        self.execution_mode = ExecutionMode.ORT_SEQUENTIAL
        self.log_severity_level = 2
        self.enable_profiling = False
        self.profile_file_prefix = 'onnxruntime_profile_'
        self.optimized_model_filepath = ''


class NodeArg:
    def __init__(self, name, shape, type_):
        self.name, self.shape, self.type = name, shape, type_


def _log(line):
    path = os.environ.get('FAKE_ORT_LOG')
    if path:
        with open(path, 'a') as f:
            f.write(line + '\n')


class InferenceSession:
    def __init__(self, path, sess_options=None, providers=None):
        if not os.path.exists(path):
            raise RuntimeError(f'NO_SUCHFILE: {path}')
        if 'broken' in os.path.basename(path):
            raise RuntimeError(f'INVALID_PROTOBUF: Load model from {path} failed')
        self._path = path
        self._options = sess_options or SessionOptions()
        self._events = []
        self._start = time.perf_counter()
        self._runs = 0
        if self._options.optimized_model_filepath:
            shutil.copyfile(path, self._options.optimized_model_filepath)
        _log(f'session {os.path.basename(path)} level={self._options.graph_optimization_level} '
             f'threads={self._options.intra_op_num_threads} profiling={self._options.enable_profiling}')

    def get_inputs(self):
        return [NodeArg('x', ['batch', 3, 4, 4], 'tensor(float)'), NodeArg('steps', [2], 'tensor(int64)')]

    def _us(self):
        return int((time.perf_counter() - self._start) * 1e6)

    def run(self, output_names, feeds):
        x = feeds['x']
        if x.dtype != np.float32 or x.shape != (1, 3, 4, 4) or feeds['steps'].dtype != np.int64:
            raise RuntimeError('INVALID_ARGUMENT: unexpected input')
        begin = self._us()
        self._runs += 1
        nodes = []
        for name, op in (('conv_fused', 'FusedConv'), ('pool', 'GlobalAveragePool')):
            t = self._us()
            interrupted = self._options.enable_profiling and name == 'pool' and self._runs % 2 == 0
            time.sleep(0.04 if interrupted else 0.0005)
            nodes.append({'cat': 'Node', 'ph': 'X', 'ts': t, 'dur': self._us() - t, 'name': name + '_kernel_time',
                          'args': {'op_name': op, 'provider': 'CPUExecutionProvider'}})
            # ONNX Runtime also records the fences around a kernel: not kernels themselves
            nodes.append({'cat': 'Node', 'ph': 'X', 'ts': self._us(), 'dur': 0, 'name': name + '_fence_after',
                          'args': {'op_name': op}})
        if self._options.enable_profiling:
            self._events.append({'cat': 'Session', 'ph': 'X', 'ts': begin, 'dur': self._us() - begin,
                                 'name': 'model_run', 'args': {}})
            self._events.extend(nodes)
        _log(f'run {os.path.basename(self._path)} {float(x.sum()):.6f}')
        return [np.zeros((1, 3), dtype=np.float32)]

    def end_profiling(self):
        if not self._options.enable_profiling:
            return ''
        path = self._options.profile_file_prefix + '_fake.json'
        with open(path, 'w') as f:
            json.dump([{'cat': 'Session', 'ph': 'X', 'ts': 0, 'dur': 10, 'name': 'model_loading_uri', 'args': {}}]
                      + self._events, f)
        return path

    def __del__(self):
        try:
            _log(f'release {os.path.basename(self._path)}')
        except Exception:  # at interpreter exit, or a session that failed to load
            pass
