"""ctypes declarations of Ember's C API (extension/c/ember_c.h), and where its library and
command line are found.

The package binds the C API with ctypes instead of compiling a CPython extension, so one wheel
serves every CPython 3 version: the library has no Python ABI in it. ctypes releases the GIL
during each call, so other Python threads run while a method executes.

Search order (first found wins):
  library: $EMBER_LIBRARY, then <package>/_native/libember.so (a wheel), then
           <prefix>/lib/libember.so when the package sits in <prefix>/python/ember (the SDK);
  command line: $EMBER_CLI, then <package>/_native/ember, then <prefix>/bin/ember, then PATH.
"""
import ctypes
import os
import shutil

_HERE = os.path.dirname(os.path.abspath(__file__))
_PREFIX = os.path.normpath(os.path.join(_HERE, "..", ".."))

# EmberStatus, EmberDtype and EmberValueKind values (ember_c.h).
OK = 0
NOT_FOUND = 4
DTYPE_NAMES = ["float32", "float16", "bfloat16", "float64", "int8", "int16", "int32", "int64", "uint8", "bool"]
DTYPE_CODES = {name: code for code, name in enumerate(DTYPE_NAMES)}
VALUE_TENSOR, VALUE_INT, VALUE_DOUBLE, VALUE_BOOL, VALUE_NONE, VALUE_OTHER = range(6)
VALUE_KIND_NAMES = ["tensor", "int", "double", "bool", "none", "other"]
OPEN_ALLOW_UPDATED_WEIGHTS = 1  # EmberOpenFlags


class EmberValueInfo(ctypes.Structure):
    _fields_ = [("kind", ctypes.c_int32), ("dtype", ctypes.c_int32), ("rank", ctypes.c_size_t),
                ("max_sizes", ctypes.POINTER(ctypes.c_int64)), ("dynamic", ctypes.c_int), ("nbytes", ctypes.c_size_t)]


class EmberScalar(ctypes.Structure):
    _fields_ = [("kind", ctypes.c_int32), ("i", ctypes.c_int64), ("d", ctypes.c_double)]


class EmberTensorView(ctypes.Structure):
    _fields_ = [("dtype", ctypes.c_int32), ("rank", ctypes.c_size_t), ("sizes", ctypes.POINTER(ctypes.c_int64)),
                ("data", ctypes.c_void_p), ("nbytes", ctypes.c_size_t)]


class EmberBundledResult(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("method", ctypes.c_char_p), ("passed", ctypes.c_int),
                ("max_abs_error", ctypes.c_double), ("rel_l2_error", ctypes.c_double), ("message", ctypes.c_char_p)]


_P = ctypes.c_void_p  # EmberModule*
_S = ctypes.c_char_p  # method names
_SIZE = ctypes.c_size_t
_OUT_SIZE = ctypes.POINTER(ctypes.c_size_t)
_OUT_STR = ctypes.POINTER(ctypes.c_char_p)

# name -> argument types; every function returns EmberStatus (int) unless listed in _RESTYPES.
_SIGNATURES = {
    "ember_last_error": [],
    "ember_version": [],
    "ember_module_open": [ctypes.c_char_p, ctypes.POINTER(_P)],
    "ember_module_open_with_data": [ctypes.c_char_p, ctypes.POINTER(ctypes.c_char_p), _SIZE, ctypes.POINTER(_P)],
    "ember_module_open_with_flags": [ctypes.c_char_p, ctypes.POINTER(ctypes.c_char_p), _SIZE, ctypes.c_uint32,
                                     ctypes.POINTER(_P)],
    "ember_module_close": [_P],
    "ember_module_set_num_threads": [_P, _SIZE],
    "ember_module_load_method": [_P, _S],
    "ember_module_method_count": [_P, _OUT_SIZE],
    "ember_module_method_name": [_P, _SIZE, _OUT_STR],
    "ember_module_num_inputs": [_P, _S, _OUT_SIZE],
    "ember_module_num_outputs": [_P, _S, _OUT_SIZE],
    "ember_module_input_info": [_P, _S, _SIZE, ctypes.POINTER(EmberValueInfo)],
    "ember_module_output_info": [_P, _S, _SIZE, ctypes.POINTER(EmberValueInfo)],
    "ember_module_num_delegates": [_P, _S, _OUT_SIZE],
    "ember_module_delegate_backend": [_P, _S, _SIZE, _OUT_STR],
    "ember_module_planned_bytes": [_P, _S, _OUT_SIZE],
    "ember_module_set_input": [_P, _S, _SIZE, ctypes.c_int32, ctypes.POINTER(ctypes.c_int64), _SIZE, ctypes.c_void_p,
                               _SIZE],
    "ember_module_set_input_scalar": [_P, _S, _SIZE, ctypes.POINTER(EmberScalar)],
    "ember_module_execute": [_P, _S],
    "ember_module_output": [_P, _S, _SIZE, ctypes.POINTER(EmberTensorView)],
    "ember_module_output_scalar": [_P, _S, _SIZE, ctypes.POINTER(EmberScalar)],
    "ember_module_reset_state": [_P, _S],
    "ember_module_verify_bundled": [_P, ctypes.c_double, ctypes.c_double, _OUT_SIZE],
    "ember_module_bundled_result": [_P, _SIZE, ctypes.POINTER(EmberBundledResult)],
}
_RESTYPES = {"ember_last_error": ctypes.c_char_p, "ember_version": ctypes.c_char_p, "ember_module_close": None}


def library_path():
    """The libember.so this package loads (see the module docstring for the search order)."""
    given = os.environ.get("EMBER_LIBRARY")
    if given:
        return given
    for candidate in (os.path.join(_HERE, "_native", "libember.so"), os.path.join(_PREFIX, "lib", "libember.so")):
        if os.path.isfile(candidate):
            return candidate
    raise ImportError("ember: libember.so not found beside the package (_native/libember.so) or in the SDK prefix "
                      f"({_PREFIX}/lib); install the wheel (python3 -m pip install .) or set EMBER_LIBRARY to its path")


def cli_path():
    """The `ember` command line the exporter and profiler run (see the module docstring)."""
    given = os.environ.get("EMBER_CLI")
    if given:
        return given
    for candidate in (os.path.join(_HERE, "_native", "ember"), os.path.join(_PREFIX, "bin", "ember")):
        if os.access(candidate, os.X_OK):
            return candidate
    found = shutil.which("ember")
    if found:
        return found
    raise RuntimeError("ember: the `ember` command line was not found (the wheel's ember/_native/ember, the SDK's "
                       "PREFIX/bin/ember or PATH); reinstall the package or set EMBER_CLI to its path")


def _load():
    lib = ctypes.CDLL(library_path())
    for name, argtypes in _SIGNATURES.items():
        fn = getattr(lib, name)
        fn.argtypes = argtypes
        fn.restype = _RESTYPES.get(name, ctypes.c_int)
    return lib


lib = _load()


def last_error():
    return lib.ember_last_error().decode("utf-8", "replace")


def check(status, what=None):
    """Raises RuntimeError with the runtime's message when `status` is not OK."""
    if status != OK:
        message = last_error()
        raise RuntimeError(f"{what}: {message}" if what else message)
