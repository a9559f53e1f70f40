#!/usr/bin/env python3
"""Writes every ATen operator schema PyTorch registers (all overloads: functional, in-place,
out=, backward) to exporter/ops/aten_schemas.txt, the exporter's generated schema table,
followed by the quantized_decomposed:: operators of PyTorch's PT2E quantization flow (the
quantize/dequantize/choose_qparams ops `convert_pt2e` writes), prefixed with their namespace.

The exporter reads the argument names, order, kinds and defaults of each op from that file
(compiled in by //exporter/ops:aten_schemas_cc); the hand-written exporter/ops/op_schema_table.cc
keeps only what PyTorch does not register under aten:: (Python operators, symbolic ints).
Re-run after a PyTorch upgrade; the first line records the version, which the exporter
compares with the version a .pt2 was written by.

Usage: python3 tools/schemas/dump_aten_schemas.py [OUT]   (PyPI torch)
"""
import os
import sys

import torch
import torch.ao.quantization.fx._decomposed  # noqa: F401  registers quantized_decomposed::

# Namespaces besides aten:: whose operators appear in exported programs.
EXTRA_NAMESPACES = ("quantized_decomposed",)


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(__file__), "..", "..", "exporter", "ops", "aten_schemas.txt")
    schemas = []
    for name in torch._C._dispatch_get_all_op_names():
        if not name.startswith("aten::"):
            continue
        base, _, overload = name[len("aten::"):].partition(".")
        schema = str(torch._C._get_schema("aten::" + base, overload))
        if "\n" in schema:
            raise SystemExit(f"schema with a newline: {name}")
        schemas.append(schema[len("aten::"):])
    schemas.sort()
    extra = []
    for name in torch._C._dispatch_get_all_op_names():
        ns = name.split("::")[0]
        if ns not in EXTRA_NAMESPACES:
            continue
        base, _, overload = name.partition(".")
        schema = str(torch._C._get_schema(base, overload))
        if "\n" in schema:
            raise SystemExit(f"schema with a newline: {name}")
        extra.append(schema)
    extra.sort()
    version = torch.__version__.split("+")[0]
    with open(out, "w") as f:
        f.write(f"# torch {version}: {len(schemas)} aten schemas + {len(extra)} of "
                f"{', '.join(EXTRA_NAMESPACES)}, written by tools/schemas/dump_aten_schemas.py\n")
        for s in schemas + extra:
            f.write(s + "\n")
    print(f"wrote {out}: {len(schemas)} aten + {len(extra)} other schemas from torch {torch.__version__}")


if __name__ == "__main__":
    main()
