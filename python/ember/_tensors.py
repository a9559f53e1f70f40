"""Inputs from numpy arrays, torch tensors and other DLPack producers; outputs back as the
caller's kind.

Binding is zero-copy where the dtype and layout allow: a C-contiguous CPU array of a dtype the
runtime takes is passed by pointer. A non-contiguous one is copied into a contiguous array (the
runtime reads row-major memory); a dtype the runtime does not take is an error, never a silent
conversion. Torch tensors go through DLPack (`np.from_dlpack`), so they share memory with the
numpy view; bfloat16 travels as its int16 bits.
"""
import ctypes
import sys

import numpy as np

from . import _native


class Bound:
    """One input ready for the C API: a tensor (array + dtype code) or a scalar."""
    __slots__ = ("array", "dtype_code", "scalar")

    def __init__(self, array=None, dtype_code=None, scalar=None):
        self.array = array
        self.dtype_code = dtype_code
        self.scalar = scalar


def _torch():
    return sys.modules.get("torch")  # only when the caller already imported it


def is_torch_tensor(x):
    torch = _torch()
    return torch is not None and isinstance(x, torch.Tensor)


def _dtype_code(array, index):
    name = array.dtype.name
    if name not in _native.DTYPE_CODES or name == "bfloat16":
        raise TypeError(f"input {index} has dtype {array.dtype}, which Ember does not take; convert it with "
                        f"x.astype(...) to the dtype the method expects (Module.method_meta())")
    return _native.DTYPE_CODES[name]


def bind(x, index):
    """A Bound for input `index` from a numpy array, a torch tensor, a DLPack object or a
    Python scalar."""
    if isinstance(x, (bool, np.bool_)):
        return Bound(scalar=(_native.VALUE_BOOL, int(bool(x))))
    if isinstance(x, (int, np.integer)):
        return Bound(scalar=(_native.VALUE_INT, int(x)))
    if isinstance(x, (float, np.floating)):
        return Bound(scalar=(_native.VALUE_DOUBLE, float(x)))
    if is_torch_tensor(x):
        torch = _torch()
        if x.device.type != "cpu":
            raise ValueError(f"input {index} is on {x.device}; Ember runs on host memory: pass x.cpu()")
        t = x.detach()
        if t.is_conj() or t.is_neg():
            t = t.resolve_conj().resolve_neg()
        if t.dtype == torch.bfloat16:
            array = np.from_dlpack(t.contiguous().view(torch.int16))
            return Bound(array=array, dtype_code=_native.DTYPE_CODES["bfloat16"])
        if not t.is_contiguous():
            t = t.contiguous()
        x = np.from_dlpack(t)
    elif not isinstance(x, np.ndarray) and hasattr(x, "__dlpack__"):
        x = np.from_dlpack(x)
    if not isinstance(x, np.ndarray):
        raise TypeError(f"input {index} must be a numpy array, a torch tensor, a DLPack object, or an int, float or "
                        f"bool, got {type(x).__name__}")
    code = _dtype_code(x, index)
    if not x.flags.c_contiguous:
        x = np.ascontiguousarray(x)
    return Bound(array=x, dtype_code=code)


def save_npy(values, directory, prefix, what):
    """Writes each value (a tensor / array, or a tuple of them) as <directory>/<prefix>_<i>.npy, the
    files the command line reads; returns their paths. Scalars and bfloat16 (no .npy dtype) are
    refused rather than written as something else."""
    paths = []
    for i, x in enumerate(values if isinstance(values, (list, tuple)) else (values,)):
        b = bind(x, i)
        if b.array is None:
            raise TypeError(f"{what}: {prefix} {i} is a scalar; .npy files hold tensors / arrays")
        if b.dtype_code == _native.DTYPE_CODES["bfloat16"]:
            raise TypeError(f"{what}: {prefix} {i} is bfloat16, which .npy files cannot hold; convert it to float32")
        path = f"{directory}/{prefix}_{i}.npy"
        np.save(path, b.array)
        paths.append(path)
    return paths


def output_array(view):
    """A new numpy array holding a copy of an EmberTensorView (views die at the next run)."""
    shape = tuple(view.sizes[d] for d in range(view.rank))
    name = _native.DTYPE_NAMES[view.dtype]
    if name == "bfloat16":
        bits = np.empty(shape, np.uint16)
        if view.nbytes:
            _memmove(bits, view)
        # numpy has no bfloat16: widen exactly to float32 (bfloat16 is float32's top half).
        return (bits.astype(np.uint32) << 16).view(np.float32), True
    out = np.empty(shape, np.dtype(name))
    if view.nbytes:
        _memmove(out, view)
    return out, False


def _memmove(array, view):
    if array.nbytes != view.nbytes:
        raise RuntimeError(f"output of {view.nbytes} bytes does not match its shape ({array.nbytes} bytes)")
    ctypes.memmove(array.ctypes.data, view.data, view.nbytes)


def to_caller_kind(array, was_bfloat16, want_torch):
    """numpy for numpy callers; a torch tensor (sharing the array's memory) for torch callers."""
    if not want_torch:
        return array
    torch = _torch()
    tensor = torch.from_numpy(array)
    return tensor.to(torch.bfloat16) if was_bfloat16 else tensor
