"""Ember: run .pte programs exported by `ember export` (bindings over the C++ Module API).

    import numpy as np, ember
    m = ember.Module("model.pte")
    outputs = m.forward([np.zeros((1, 3, 224, 224), np.float32)])

Installed by tools/sdk/install.sh into PREFIX/python/ember (add PREFIX/python to PYTHONPATH).
"""
from ._ember import Module, __version__

__all__ = ["Module", "__version__"]
