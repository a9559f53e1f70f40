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

# Host tools (exporter, CLI): C++17, exceptions and RTTI allowed (third-party JSON), warnings are errors.
EMBER_TOOL_COPTS = [
    "-Werror",
    "-Wall",
    "-Wextra",
    "-Wno-unused-parameter",
]
