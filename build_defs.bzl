"""Shared compiler flags."""

# Runtime, kernels and delegates: C++17, no exceptions, no RTTI, warnings are errors.
EMBER_RUNTIME_COPTS = [
    "-fno-exceptions",
    "-fno-rtti",
    "-Werror",
    "-Wall",
    "-Wextra",
    "-Wno-unused-parameter",
]
