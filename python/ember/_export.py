"""ember.export: lowers a model to a .pte with Ember's C++ exporter (`ember export`).

The model is a saved torch.export archive (.pt2 path), a torch.export.ExportedProgram, or a
torch.nn.Module with example inputs (exported here with torch.export.export). The two torch
forms need torch installed; they are saved to a temporary .pt2 that the exporter reads, so what
runs is exactly what `ember export` would make of the same archive.
"""
import os
import subprocess
import sys
import tempfile


from . import _native, _tensors


def _is_torch(obj, name):
    torch = sys.modules.get("torch")
    if torch is None:
        return False
    if name == "ExportedProgram":
        return isinstance(obj, torch.export.ExportedProgram)
    return isinstance(obj, torch.nn.Module)


def _as_tuple(inputs):
    return tuple(inputs) if isinstance(inputs, (list, tuple)) else (inputs,)


def _save_pt2(model, example_inputs, dynamic_shapes, directory):
    """The .pt2 path for `model` (written into `directory` for torch objects)."""
    if isinstance(model, (str, bytes, os.PathLike)):
        if example_inputs is not None:
            raise TypeError("example_inputs is for a torch.nn.Module; a .pt2 archive already holds its inputs' shapes")
        return os.fspath(model)
    if not (_is_torch(model, "Module") or _is_torch(model, "ExportedProgram")):
        raise TypeError(f"ember.export takes a .pt2 path, a torch.export.ExportedProgram or a torch.nn.Module, "
                        f"got {type(model).__name__}")
    import torch  # a torch object was given, so torch is installed
    if _is_torch(model, "Module"):
        if example_inputs is None:
            raise TypeError("exporting a torch.nn.Module needs example_inputs (a tuple of tensors), as "
                            "torch.export.export does")
        model = torch.export.export(model.eval(), _as_tuple(example_inputs), dynamic_shapes=dynamic_shapes)
    elif example_inputs is not None:
        raise TypeError("example_inputs is for a torch.nn.Module; an ExportedProgram already holds its inputs")
    path = os.path.join(directory, "model.pt2")
    torch.export.save(model, path)
    return path


def _write_samples(samples, directory, what):
    """Writes samples (each a tensor or a tuple of tensors / arrays) as <directory>/<k>/input_<i>.npy,
    the directory-of-directories form the command line reads; returns `directory`."""
    if isinstance(samples, (str, bytes, os.PathLike)):
        return os.fspath(samples)
    samples = list(samples)
    if not samples:
        raise ValueError(f"{what} is empty; give at least one sample (a tuple of inputs)")
    for k, sample in enumerate(samples):
        case = os.path.join(directory, f"{k:04d}")
        os.makedirs(case)
        _tensors.save_npy(sample, case, "input", f"{what} sample {k}")
    return directory


def export(model, pte, backend="portable", *extra, example_inputs=None, dynamic_shapes=None, quantize=None,
           calibrate=None, group_size=None, bundle=None, metadata=None, external_weights=None):
    """Lowers `model` to the program `pte`; returns the exporter's summary (partition, memory
    plan, quantization report). Raises RuntimeError with the exporter's message on failure.

    model: a .pt2 path, a torch.export.ExportedProgram, or a torch.nn.Module with
        `example_inputs` (and optional `dynamic_shapes`, as torch.export.export takes them);
        or a dict {method name: .pt2 path or ExportedProgram} for a program of several methods
        (identical weights stored once; Module.execute(name, ...) runs each).
    backend: "portable", "xnnpack", "vulkan", "qnn" or a list of them in priority order.
    quantize: "int8" (static; give `calibrate`), "a16w8" (the same with int16 activations, for
        backend "qnn"), "int8-weight" or "int4-weight" (`group_size`).
    calibrate: calibration samples: a list of samples (each a tensor / array or a tuple of them),
        or a path the command line reads (`ember export --help`).
    bundle: test cases to bundle for Module.verify(): a list of (inputs, expected outputs) pairs
        (expected None: computed with the portable kernels) or case directories; with several
        methods, (method, inputs, expected outputs) triples or "METHOD:DIR" strings.
    metadata: a dict of program metadata strings.
    external_weights: a .ptd path: the weights go to this data file instead of the program (run
        with ember.Module(pte, data=external_weights)); an existing file is appended to, its
        tensors reused, so several programs can share one copy of their common weights.
    extra: further `ember export` flags (e.g. "--xnnpack-fp16").
    """
    backends = [backend] if isinstance(backend, str) else list(backend)
    with tempfile.TemporaryDirectory(prefix="ember_export_") as tmp:
        if isinstance(model, dict):  # several methods: {name: archive / ExportedProgram}
            if example_inputs is not None:
                raise TypeError("with several methods, give each as a .pt2 path or an ExportedProgram")
            if not model:
                raise ValueError("give at least one method: {name: model}")
            cmd = [_native.cli_path(), "export", "-o", os.fspath(pte)]
            for name, each in model.items():
                directory = os.path.join(tmp, f"method_{len(cmd)}")
                os.makedirs(directory)
                cmd += ["--method", f"{name}={_save_pt2(each, None, None, directory)}"]
        else:
            cmd = [_native.cli_path(), "export", _save_pt2(model, example_inputs, dynamic_shapes, tmp), "-o",
                   os.fspath(pte)]
        for b in backends:
            cmd += ["--backend", b]
        if quantize is not None:
            cmd += ["--quantize", str(quantize)]
        if group_size is not None:
            cmd += ["--group-size", str(int(group_size))]
        if calibrate is not None:
            cmd += ["--calibrate", _write_samples(calibrate, os.path.join(tmp, "calibration"), "calibrate")]
        for case in _write_bundle(bundle, os.path.join(tmp, "bundle")) if bundle is not None else []:
            cmd += ["--bundle", case]
        for key, value in (metadata or {}).items():
            cmd += ["--metadata", f"{key}={value}"]
        if external_weights is not None:
            cmd += ["--external-weights", os.fspath(external_weights)]
        cmd += [str(e) for e in extra]
        done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError((done.stderr or done.stdout).strip() or f"ember export failed ({done.returncode})")
    return done.stdout


def _write_bundle(bundle, directory):
    """Case directories for `ember export --bundle` (repeatable): each case a directory path, or an
    (inputs, expected outputs) pair written as <directory>/case<k>/{input,output}_<i>.npy; with
    outputs None the exporter computes them with the portable kernels."""
    if isinstance(bundle, (str, bytes, os.PathLike)):
        return [os.fspath(bundle)]
    dirs = []
    for k, case in enumerate(bundle):
        if isinstance(case, (str, bytes, os.PathLike)):
            dirs.append(os.fspath(case))
            continue
        if not isinstance(case, (list, tuple)) or len(case) not in (2, 3):
            raise TypeError(f"bundle case {k}: give a directory, an (inputs, expected_outputs) pair, or "
                            f"(method, inputs, expected_outputs) for a program of several methods")
        method = case[0] if len(case) == 3 else None
        inputs, outputs = case[-2:]
        path = os.path.join(directory, f"case{k}")
        os.makedirs(path)
        for prefix, values in (("input", inputs), ("output", outputs)):
            if values is not None:
                _tensors.save_npy(values, path, prefix, f"bundle case {k}")
        dirs.append(f"{method}:{path}" if method else path)
    return dirs
