"""ember.Module: a loaded .pte program (the C API's EmberModule) with numpy / torch in and out.

Lifetime: the program stays mapped until the Module is closed (close(), a `with` block, or
garbage collection). Outputs are new arrays (copied out of the runtime's memory, which the next
run reuses); inputs are read in place during the call. Threading: calls on one Module are
serialized by a lock (the runtime allows one caller per Module at a time); use one Module per
thread to run in parallel. The GIL is released while a method runs.
"""
import ctypes
import json
import os
import subprocess
import tempfile
import threading

import numpy as np

from . import _native, _tensors


class BundledCase:
    """One bundled test case's outcome (Module.verify)."""
    __slots__ = ("name", "method", "passed", "max_abs_error", "rel_l2_error", "message")

    def __init__(self, r):
        self.name = r.name.decode()
        self.method = r.method.decode()
        self.passed = bool(r.passed)
        self.max_abs_error = r.max_abs_error
        self.rel_l2_error = r.rel_l2_error
        self.message = r.message.decode("utf-8", "replace")

    def __repr__(self):
        verdict = "passed" if self.passed else f"FAILED: {self.message}"
        return (f"<case {self.name!r} ({self.method}): {verdict}; max abs error {self.max_abs_error:.3g}, "
                f"relative L2 {self.rel_l2_error:.3g}>")


class VerifyReport:
    """Module.verify's result: every case; true when all passed."""

    def __init__(self, cases):
        self.cases = cases

    @property
    def passed(self):
        return all(c.passed for c in self.cases)

    def __bool__(self):
        return self.passed

    def __iter__(self):
        return iter(self.cases)

    def __len__(self):
        return len(self.cases)

    def __repr__(self):
        failed = sum(not c.passed for c in self.cases)
        return f"<VerifyReport: {len(self.cases) - failed} passed, {failed} failed>"


class Profile:
    """Module.profile's result: per-run latency and the operator table of `ember profile`.

    latency_ms: each measured run's wall time; report: the table `ember profile` prints
    (operators by total time, inside delegates too); events: the Chrome trace events (open
    the JSON from trace_json() in https://ui.perfetto.dev)."""

    def __init__(self, report, events, iterations):
        self.report = report
        self.events = events
        runs = [e for e in events if e.get("ph") == "X" and e.get("cat") == "execute"]
        self.latency_ms = [e["dur"] / 1e3 for e in runs[-iterations:]]

    @property
    def median_ms(self):
        return float(np.median(self.latency_ms)) if self.latency_ms else float("nan")

    def trace_json(self):
        return json.dumps({"traceEvents": self.events, "displayTimeUnit": "ns"})

    def __str__(self):
        return self.report

    def __repr__(self):
        return f"<Profile: {len(self.latency_ms)} runs, median {self.median_ms:.3f} ms>"


def _describe(info):
    d = {"kind": _native.VALUE_KIND_NAMES[info.kind] if 0 <= info.kind < 6 else "other"}
    if info.kind == _native.VALUE_TENSOR:
        name = _native.DTYPE_NAMES[info.dtype]
        d["dtype"] = np.dtype("float32" if name == "bfloat16" else name)
        d["dtype_name"] = name
        d["shape"] = tuple(info.max_sizes[i] for i in range(info.rank))
        d["dynamic"] = bool(info.dynamic)
        d["nbytes"] = info.nbytes
    return d


def _signature(values):
    parts = []
    for v in values:
        if v["kind"] != "tensor":
            parts.append(v["kind"])
        else:
            dims = ",".join(str(s) for s in v["shape"])
            parts.append(f"{v['dtype_name']}[{dims}]{'<=' if v['dynamic'] else ''}")
    return ", ".join(parts)


def _data_paths(data):
    """Module's `data`: None, one path (str, bytes or os.PathLike) or a list / tuple of them."""
    if data is None:
        return []
    if isinstance(data, (str, bytes, os.PathLike)):
        data = [data]
    elif not isinstance(data, (list, tuple)):
        raise TypeError(f"data is a .ptd path or a list of them, got {type(data).__name__}")
    paths = [os.fsdecode(os.fspath(p)) for p in data]
    if not paths:
        raise ValueError("data is empty; give the .ptd data file(s) the program was exported with, or leave data out")
    return paths


class Module:
    """A .pte program, opened and verified.

        m = ember.Module("model.pte", threads=4)
        (logits,) = m.forward(x)           # numpy in, numpy out; torch in, torch out
        m.method_meta("forward")           # inputs, outputs, delegates, planned memory

    A program exported with external weights (ember.export(..., external_weights="w.ptd"))
    needs its data file: ember.Module("model.pte", data="w.ptd") (or a list, searched in order).
    Each data file is opened once per process and shared by every Module naming it; keep it in
    place while a Module uses it. allow_updated_weights=True accepts data file tensors whose
    bytes changed since the export (same names, dtypes and shapes).
    """

    def __init__(self, path, threads=None, data=None, allow_updated_weights=False):
        self.path = os.fspath(path)
        self.data = _data_paths(data)
        self._allow_updated_weights = bool(allow_updated_weights)
        handle = ctypes.c_void_p()
        if self.data:
            paths = (ctypes.c_char_p * len(self.data))(*(os.fsencode(p) for p in self.data))
            flags = _native.OPEN_ALLOW_UPDATED_WEIGHTS if allow_updated_weights else 0
            _native.check(_native.lib.ember_module_open_with_flags(self.path.encode(), paths, len(self.data), flags,
                                                                   ctypes.byref(handle)))
        elif allow_updated_weights:
            raise ValueError("allow_updated_weights applies to the weights in data files; give them with data=")
        else:
            status = _native.lib.ember_module_open(self.path.encode(), ctypes.byref(handle))
            if status == _native.NOT_FOUND:  # without data files: a program whose weights are in one
                raise RuntimeError(f"{_native.last_error()} (from Python: ember.Module(path, data=\"FILE.ptd\"))")
            _native.check(status)
        self._handle = handle
        self._lock = threading.Lock()
        self._threads = 1
        self._io = {}  # method -> (number of inputs, each output's kind): read once, they never change
        if threads is not None:
            self.set_num_threads(threads)

    # --- lifetime ---------------------------------------------------------------------------
    def close(self):
        """Unmaps the program and frees everything the Module loaded (idempotent)."""
        handle, self._handle = getattr(self, "_handle", None), None
        if handle:
            _native.lib.ember_module_close(handle)

    def __del__(self):
        try:
            self.close()
        except Exception:  # interpreter shutdown: the ctypes module may already be torn down
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _h(self):
        if not self._handle:
            raise RuntimeError("this ember.Module is closed; open the program again")
        return self._handle

    # --- description ------------------------------------------------------------------------
    def method_names(self):
        count = ctypes.c_size_t()
        _native.check(_native.lib.ember_module_method_count(self._h(), ctypes.byref(count)))
        names = []
        for i in range(count.value):
            name = ctypes.c_char_p()
            _native.check(_native.lib.ember_module_method_name(self._h(), i, ctypes.byref(name)))
            names.append(name.value.decode())
        return names

    def method_meta(self, method="forward"):
        """{"name", "inputs", "outputs", "delegates", "planned_bytes"}: each input / output a dict
        {"kind": "tensor", "dtype", "shape" (upper bounds when dynamic), "dynamic", "nbytes"} or
        {"kind": "int" | "double" | "bool" | "none" | "other"}; "delegates" the backend of each
        delegate call ("xnnpack", "vulkan", "qnn"); "planned_bytes" the activation arenas."""
        h, m = self._h(), method.encode()
        lib = _native.lib

        def values(count_fn, info_fn):
            n = ctypes.c_size_t()
            _native.check(count_fn(h, m, ctypes.byref(n)))
            out = []
            for i in range(n.value):
                info = _native.EmberValueInfo()
                _native.check(info_fn(h, m, i, ctypes.byref(info)))
                out.append(_describe(info))
            return out

        inputs = values(lib.ember_module_num_inputs, lib.ember_module_input_info)
        outputs = values(lib.ember_module_num_outputs, lib.ember_module_output_info)
        n = ctypes.c_size_t()
        _native.check(lib.ember_module_num_delegates(h, m, ctypes.byref(n)))
        delegates = []
        for i in range(n.value):
            backend = ctypes.c_char_p()
            _native.check(lib.ember_module_delegate_backend(h, m, i, ctypes.byref(backend)))
            delegates.append(backend.value.decode())
        planned = ctypes.c_size_t()
        _native.check(lib.ember_module_planned_bytes(h, m, ctypes.byref(planned)))
        return {"name": method, "inputs": inputs, "outputs": outputs, "delegates": delegates,
                "planned_bytes": planned.value}

    def __repr__(self):
        if not self._handle:
            return f"<ember.Module {self.path!r} (closed)>"
        data = f", data {self.data!r}" if self.data else ""
        lines = [f"<ember.Module {self.path!r}{data}, {self._threads} thread{'s' if self._threads != 1 else ''}"]
        for name in self.method_names():
            meta = self.method_meta(name)
            counts = {}
            for d in meta["delegates"]:
                counts[d] = counts.get(d, 0) + 1
            delegated = ", ".join(f"{b} x{c}" for b, c in counts.items()) or "none (portable kernels)"
            lines.append(f"  {name}({_signature(meta['inputs'])}) -> ({_signature(meta['outputs'])})")
            lines.append(f"    delegates: {delegated}; planned activations {_bytes(meta['planned_bytes'])}")
        return "\n".join(lines) + ">"

    # --- running ----------------------------------------------------------------------------
    def set_num_threads(self, threads):
        """Threads for kernels and delegates; loaded methods reload (their state resets)."""
        with self._lock:
            _native.check(_native.lib.ember_module_set_num_threads(self._h(), int(threads)))
            self._threads = int(threads)

    def load_method(self, method="forward"):
        """Loads `method` now (memory, kernels, delegates) instead of at its first run."""
        with self._lock:
            _native.check(_native.lib.ember_module_load_method(self._h(), method.encode()))

    def execute(self, method, inputs=()):
        """Runs `method`; `inputs` a list / tuple of numpy arrays, torch tensors, DLPack objects
        or Python scalars. Returns a list: torch tensors when any input was one, else numpy."""
        if not isinstance(inputs, (list, tuple)):
            inputs = [inputs]
        want_torch = any(_tensors.is_torch_tensor(x) for x in inputs)
        bound = [_tensors.bind(x, i) for i, x in enumerate(inputs)]
        lib, m = _native.lib, method.encode()
        with self._lock:
            h = self._h()
            num_inputs, output_kinds = self._io.get(method) or self._read_io(method)
            if num_inputs != len(bound):
                raise RuntimeError(f"'{method}' takes {num_inputs} inputs, {len(bound)} given "
                                   f"(Module.method_meta('{method}') describes them)")
            for i, b in enumerate(bound):
                if b.scalar is not None:
                    value = _native.EmberScalar(b.scalar[0], b.scalar[1] if b.scalar[0] != _native.VALUE_DOUBLE else 0,
                                                b.scalar[1] if b.scalar[0] == _native.VALUE_DOUBLE else 0.0)
                    _native.check(lib.ember_module_set_input_scalar(h, m, i, ctypes.byref(value)))
                    continue
                a = b.array
                sizes = (ctypes.c_int64 * max(a.ndim, 1))(*a.shape)
                _native.check(lib.ember_module_set_input(h, m, i, b.dtype_code, sizes, a.ndim,
                                                         ctypes.c_void_p(a.ctypes.data), a.nbytes))
            # `bound` keeps every array alive until the run has read it.
            _native.check(lib.ember_module_execute(h, m))
            results = []
            for i, kind in enumerate(output_kinds):
                if kind == _native.VALUE_TENSOR:
                    view = _native.EmberTensorView()
                    _native.check(lib.ember_module_output(h, m, i, ctypes.byref(view)))
                    array, was_bf16 = _tensors.output_array(view)
                    results.append(_tensors.to_caller_kind(array, was_bf16, want_torch))
                else:
                    value = _native.EmberScalar()
                    _native.check(lib.ember_module_output_scalar(h, m, i, ctypes.byref(value)))
                    results.append(_scalar(value))
            del bound
            return results

    def _read_io(self, method):
        meta = self.method_meta(method)
        kinds = [_native.VALUE_KIND_NAMES.index(o["kind"]) for o in meta["outputs"]]
        self._io[method] = (len(meta["inputs"]), kinds)
        return self._io[method]

    def forward(self, *inputs):
        """execute("forward", ...): forward(x), forward(x, y) or forward([x, y])."""
        if len(inputs) == 1 and isinstance(inputs[0], (list, tuple)):
            inputs = inputs[0]
        return self.execute("forward", list(inputs))

    __call__ = forward

    def run_method(self, method, inputs=()):
        """The same as execute (the C++ API's name)."""
        return self.execute(method, inputs)

    def reset_state(self, method="forward"):
        """Restores `method`'s mutable state (KV caches, RNN states) to its initial value."""
        with self._lock:
            _native.check(_native.lib.ember_module_reset_state(self._h(), method.encode()))

    # --- checking and timing ----------------------------------------------------------------
    def verify(self, rtol=None, atol=None):
        """Runs the test cases bundled in the program (`ember export --bundle`, or
        ember.export(..., bundle=...)). Tolerances default by output dtype, as `ember verify`'s
        (float32: rtol 1e-4, atol 1e-5 on the max and RMS error, scaled by the output; integer
        outputs exact). Returns a VerifyReport (true when every case passed)."""
        with self._lock:
            count = ctypes.c_size_t()
            _native.check(_native.lib.ember_module_verify_bundled(
                self._h(), -1.0 if rtol is None else float(rtol), -1.0 if atol is None else float(atol),
                ctypes.byref(count)), "verify")
            cases = []
            for i in range(count.value):
                r = _native.EmberBundledResult()
                _native.check(_native.lib.ember_module_bundled_result(self._h(), i, ctypes.byref(r)))
                cases.append(BundledCase(r))
            return VerifyReport(cases)

    def profile(self, inputs, method="forward", iterations=20, warmup=2, threads=None):
        """Times `method` on `inputs` with every operator traced (kernels and the operators
        inside delegates), by running `ember profile` on this program in a child process (a
        profiled load builds delegates with per-operator timers, which this Module's are not).
        Returns a Profile."""
        if not isinstance(inputs, (list, tuple)):
            inputs = [inputs]
        with tempfile.TemporaryDirectory(prefix="ember_profile_") as tmp:
            cmd = [_native.cli_path(), "profile", self.path, "--method", method, "--iterations", str(int(iterations)),
                   "--warmup", str(int(warmup)), "--threads", str(int(threads or self._threads)),
                   "--trace", os.path.join(tmp, "trace.json")]
            for path in self.data:
                cmd += ["--data", path]
            if self._allow_updated_weights:
                cmd.append("--allow-updated-weights")
            for path in _tensors.save_npy(list(inputs), tmp, "input", "profile"):
                cmd += ["--input", path]
            done = subprocess.run(cmd, capture_output=True, text=True)
            if done.returncode != 0:
                raise RuntimeError((done.stderr or done.stdout).strip() or f"ember profile failed ({done.returncode})")
            with open(os.path.join(tmp, "trace.json")) as f:
                events = json.load(f)["traceEvents"]
        return Profile(done.stdout, events, int(iterations))


def _bytes(n):
    return f"{n / 2**20:.2f} MiB" if n >= 2**20 else f"{n / 2**10:.1f} KiB"


def _scalar(value):
    if value.kind == _native.VALUE_INT:
        return int(value.i)
    if value.kind == _native.VALUE_BOOL:
        return bool(value.i)
    if value.kind == _native.VALUE_DOUBLE:
        return float(value.d)
    return None
