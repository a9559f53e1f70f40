"""Ember: export PyTorch models to .pte programs and run them (bindings over Ember's C API).

    import numpy as np, ember
    ember.export("model.pt2", "model.pte", backend="xnnpack")     # or an ExportedProgram / nn.Module
    m = ember.Module("model.pte", threads=4)
    print(m)                                  # methods, their inputs and outputs, delegates, memory
    (logits,) = m.forward(np.zeros((1, 3, 224, 224), np.float32))  # torch tensors in: torch out
    m.profile(x).median_ms; m.verify()        # per-operator timing; bundled test cases

Installed from a wheel (`python3 -m pip install .` in the repository; docs/python.md), or by the
SDK (tools/sdk/install.sh: PREFIX/python/ember over PREFIX/lib/libember.so). The `ember` command
line ships in the package too (`ember ...` or `python3 -m ember ...`).
"""
from ._export import export
from ._module import BundledCase, Module, Profile, VerifyReport
from ._native import cli_path, library_path, lib as _lib

__version__ = _lib.ember_version().decode()

__all__ = ["BundledCase", "Module", "Profile", "VerifyReport", "__version__", "cli_path", "export", "library_path"]
