"""Ember: run .pte programs exported by `ember export` (bindings over the C++ Module API).

    import numpy as np, ember
    ember.export("model.pt2", "model.pte", backend="xnnpack")
    m = ember.Module("model.pte")
    m.method_meta("forward")         # {"name", "inputs": [{"dtype", "shape", "dynamic"}], "outputs"}
    outputs = m.forward([np.zeros((1, 3, 224, 224), np.float32)])

Installed by tools/sdk/install.sh into PREFIX/python/ember (add PREFIX/python to PYTHONPATH).
"""
import os
import shutil
import subprocess

from ._ember import Module, __version__

__all__ = ["Module", "__version__", "export"]


def _cli():
    """The `ember` command line: $EMBER_CLI, else PREFIX/bin/ember beside this package, else PATH."""
    given = os.environ.get("EMBER_CLI")
    if given:
        return given
    installed = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bin", "ember")
    if os.access(installed, os.X_OK):
        return installed
    found = shutil.which("ember")
    if found:
        return found
    raise RuntimeError("ember.export needs the `ember` command line: install the SDK (PREFIX/bin/ember) "
                       "or set EMBER_CLI to its path")


def export(pt2, pte, backend="portable", *extra):
    """Lowers the torch.export archive `pt2` to the program `pte` with Ember's C++ exporter
    (`ember export`). `backend`: "portable", "xnnpack", "vulkan" or a list of them in priority
    order; `extra`: further `ember export` flags (e.g. "--xnnpack-fp16"). Returns the exporter's
    summary; raises RuntimeError with its message when the export fails."""
    backends = [backend] if isinstance(backend, str) else list(backend)
    cmd = [_cli(), "export", os.fspath(pt2), "-o", os.fspath(pte)]
    for b in backends:
        cmd += ["--backend", b]
    cmd += list(extra)
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError((done.stderr or done.stdout).strip() or f"ember export failed ({done.returncode})")
    return done.stdout
