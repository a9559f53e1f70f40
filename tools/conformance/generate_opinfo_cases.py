#!/usr/bin/env python3
"""Generates operator conformance cases from PyTorch's OpInfo database
(torch.testing._internal.common_methods_invocations.op_db), laid out like ../shared/opcases
so that `ember conformance OUT` runs them unchanged.

For every OpInfo (all variants) that supports float32 on CPU, its first N float32 sample
inputs each become one case OUT/<op>[__<variant>]__<k>/ (op name with '.' -> '_'):
  model.pt2     the call wrapped in an nn.Module (tensor arguments are module inputs, every
                other argument is baked in), torch.export(strict=False): training IR
  core.pt2      model.pt2 after run_decompositions(): core ATen IR
  input_<i>.npy the module inputs; output_<i>.npy the eager results (flattened outputs)
  case.json     op, variant, sample, dtype, ops, core_aten_ops, input_shapes, input_dtypes,
                output_dtypes, nondeterministic (case_info.cc reads ops, core_aten_ops and
                nondeterministic)
Samples that cannot be expressed as such a case are skipped with the reason, in
OUT/skipped.json; OUT/summary.json has the counts. Generation is seeded per op (the same
cases on every run) and each op runs in its own forked process with a timeout, so one op
cannot hang or crash the run.

Usage: generate_opinfo_cases.py OUT [--ops a,b] [--max-samples N] [--jobs J] [--timeout S]
The data is large: keep OUT outside the repository (e.g. /tmp/opdb)."""
import argparse
import json
import os
import shutil
import signal
import sys
import time
import traceback
import zlib

import numpy as np
import torch
import torch.utils._pytree as pytree

# Imported once in the parent; forked workers share it (the import alone takes seconds).
from torch.testing._internal.common_methods_invocations import op_db  # noqa: E402


def case_prefix(op):
    name = op.name.replace(".", "_")
    return name + ("__" + op.variant_test_name.replace(".", "_") if op.variant_test_name else "")


def op_key(op):
    return op.name + ("." + op.variant_test_name if op.variant_test_name else "")


class Call(torch.nn.Module):
    """op(input, *args, **kwargs) with the tensor leaves of (input, args, kwargs) as inputs."""

    def __init__(self, fn, spec, leaves, tensor_slots):
        super().__init__()
        self.fn = fn
        self.spec = spec
        self.leaves = leaves
        self.tensor_slots = tensor_slots

    def forward(self, *tensors):
        leaves = list(self.leaves)
        for slot, t in zip(self.tensor_slots, tensors):
            leaves[slot] = t
        inp, args, kwargs = pytree.tree_unflatten(leaves, self.spec)
        return self.fn(inp, *args, **kwargs)


def graph_ops(ep):
    ops = set()
    for node in ep.graph.nodes:
        if node.op == "call_function":
            ops.add(str(node.target))
    return sorted(ops)


def flatten_outputs(out):
    """The output's tensor leaves, or a reason why it is not a tensor / list of tensors."""
    leaves, _ = pytree.tree_flatten(out)
    if not leaves:
        return None, "no outputs"
    for x in leaves:
        if not isinstance(x, torch.Tensor):
            return None, "output is not a tensor or a list of tensors (%s)" % type(x).__name__
        if x.is_complex():
            return None, "complex output (%s)" % x.dtype
        if x.dtype in (torch.bfloat16, torch.float16) or "float8" in str(x.dtype) or x.is_quantized:
            return None, "output dtype %s has no .npy form here" % x.dtype
        if x.layout != torch.strided:
            return None, "non-strided output layout %s" % x.layout
    return leaves, None


def same(a, b):
    for x, y in zip(a, b):
        if x.shape != y.shape or x.dtype != y.dtype:
            return False
        if not torch.equal(torch.nan_to_num(x, nan=0.0) if x.is_floating_point() else x,
                           torch.nan_to_num(y, nan=0.0) if y.is_floating_point() else y):
            return False
        if x.is_floating_point() and not torch.equal(torch.isnan(x), torch.isnan(y)):
            return False
    return True


def first_line(e):
    text = ("%s: %s" % (type(e).__name__, e)).strip()
    for line in text.splitlines():
        if line.strip():
            return line.strip()[:300]
    return type(e).__name__


def make_case(op, index, sample, out_dir, tmp_root):
    """Writes one case; returns (case name, None) or (None, skip reason)."""
    leaves, spec = pytree.tree_flatten((sample.input, tuple(sample.args), dict(sample.kwargs)))
    slots = [i for i, x in enumerate(leaves) if isinstance(x, torch.Tensor)]
    tensors = [leaves[i] for i in slots]
    # Factories (arange, full, ...) have no tensor inputs: a module without inputs.
    for t in tensors:
        if t.is_complex():
            return None, "complex input (%s)" % t.dtype
        if t.layout != torch.strided:
            return None, "non-strided input layout %s" % t.layout
        if t.dtype in (torch.bfloat16, torch.float16) or "float8" in str(t.dtype) or t.is_quantized:
            return None, "input dtype %s" % t.dtype
    if tensors and not any(t.dtype == torch.float32 for t in tensors):
        return None, "no float32 tensor input (%s)" % ", ".join(sorted({str(t.dtype) for t in tensors}))
    # Inputs are saved contiguous, as the runtime receives them.
    tensors = [t.detach().contiguous().clone() for t in tensors]
    module = Call(op.op, spec, [None if i in slots else x for i, x in enumerate(leaves)], slots).eval()

    # Eager twice with different seeds: results that change are random (or uninitialised)
    # and can only be checked for shape and dtype.
    try:
        torch.manual_seed(1)
        out = module(*[t.clone() for t in tensors])
        outs, why = flatten_outputs(out)
        if why:
            return None, why
        outs = [o.detach().contiguous().clone() for o in outs]
        if not tensors and not any(o.dtype == torch.float32 for o in outs):
            return None, "no tensor inputs and no float32 output"
        torch.manual_seed(2)
        again, _ = flatten_outputs(module(*[t.clone() for t in tensors]))
        nondeterministic = again is None or not same(outs, [o.detach() for o in again])
    except Exception as e:  # noqa: BLE001 - the sample itself fails in eager PyTorch
        return None, "eager call fails: " + first_line(e)

    try:
        ep = torch.export.export(module, tuple(t.clone() for t in tensors), strict=False)
    except Exception as e:  # noqa: BLE001
        return None, "torch.export fails: " + first_line(e)
    try:
        core = ep.run_decompositions()
    except Exception as e:  # noqa: BLE001
        return None, "run_decompositions fails: " + first_line(e)

    name = "%s__%d" % (case_prefix(op), index)
    tmp = os.path.join(tmp_root, name)
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    try:
        torch.export.save(ep, os.path.join(tmp, "model.pt2"))
        torch.export.save(core, os.path.join(tmp, "core.pt2"))
    except Exception as e:  # noqa: BLE001
        shutil.rmtree(tmp, ignore_errors=True)
        return None, "torch.export.save fails: " + first_line(e)
    for i, t in enumerate(tensors):
        np.save(os.path.join(tmp, "input_%d.npy" % i), t.numpy())
    for i, o in enumerate(outs):
        np.save(os.path.join(tmp, "output_%d.npy" % i), o.numpy())
    info = {
        "op": op.name,
        "variant": op.variant_test_name,
        "sample": index,
        "dtype": "torch.float32",
        "ops": graph_ops(ep),
        "core_aten_ops": graph_ops(core),
        "input_shapes": [list(t.shape) for t in tensors],
        "input_dtypes": [str(t.dtype) for t in tensors],
        "output_shapes": [list(o.shape) for o in outs],
        "output_dtypes": [str(o.dtype) for o in outs],
        "nondeterministic": bool(nondeterministic),
        "generator": "tools/conformance/generate_opinfo_cases.py (torch %s)" % torch.__version__,
    }
    with open(os.path.join(tmp, "case.json"), "w") as f:
        json.dump(info, f)
    final = os.path.join(out_dir, name)
    shutil.rmtree(final, ignore_errors=True)
    os.rename(tmp, final)  # a case directory appears complete or not at all
    return name, None


def run_op(op, out_dir, max_samples, status_path):
    """Worker (forked child): every sample of one OpInfo; results to status_path."""
    torch.set_num_threads(1)
    result = {"op": op_key(op), "cases": [], "skipped": []}

    def skip(sample, reason):
        result["skipped"].append({"op": op.name, "variant": op.variant_test_name, "sample": sample,
                                  "reason": reason})

    def flush(final=False):
        # Progress goes to .part (read back when the op is killed); the status file itself
        # only appears once the op is finished, which is what --resume trusts.
        with open(status_path + ".tmp", "w") as f:
            json.dump(result, f)
        os.replace(status_path + ".tmp", status_path if final else status_path + ".part")

    tmp_root = os.path.join(out_dir, ".tmp")
    try:
        if torch.float32 not in op.supported_dtypes("cpu"):
            skip(None, "float32 is not supported on CPU by this OpInfo")
            flush(final=True)
            return
        torch.manual_seed(zlib.crc32(op_key(op).encode()))
        samples = op.sample_inputs("cpu", torch.float32, requires_grad=False)
        for index, sample in enumerate(samples):
            if index >= max_samples:
                break
            try:
                name, why = make_case(op, index, sample, out_dir, tmp_root)
            except Exception as e:  # noqa: BLE001
                name, why = None, "generator error: " + first_line(e)
            if name:
                result["cases"].append(name)
            else:
                skip(index, why)
            flush()  # progress survives a timeout
    except Exception as e:  # noqa: BLE001
        skip(None, "sample_inputs fails: " + first_line(e))
    flush(final=True)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("out")
    p.add_argument("--ops", default="", help="comma-separated OpInfo names (name or name.variant)")
    p.add_argument("--max-samples", type=int, default=3, help="first N samples per OpInfo (default 3)")
    p.add_argument("--jobs", type=int, default=max(1, (os.cpu_count() or 2) - 1))
    p.add_argument("--timeout", type=float, default=180, help="seconds per OpInfo before it is killed")
    p.add_argument("--summary-only", action="store_true",
                   help="only write summary.json/skipped.json from what an earlier run into OUT finished")
    p.add_argument("--resume", action="store_true",
                   help="keep the OpInfos an interrupted run into OUT finished (OUT/.status)")
    a = p.parse_args()

    resume = a.resume
    wanted = {s.strip() for s in a.ops.split(",") if s.strip()}
    ops = [op for op in op_db if not wanted or op.name in wanted or op_key(op) in wanted]
    if wanted and not ops:
        sys.exit("no OpInfo named %s in op_db" % ", ".join(sorted(wanted)))
    os.makedirs(a.out, exist_ok=True)
    status_dir = os.path.join(a.out, ".status")
    os.makedirs(status_dir, exist_ok=True)
    os.makedirs(os.path.join(a.out, ".tmp"), exist_ok=True)

    start = time.time()
    pending = [] if a.summary_only else list(enumerate(ops))
    running = {}  # pid -> (op, status path, start time)
    killed = {}
    done = 0
    while pending or running:
        while pending and len(running) < a.jobs:
            i, op = pending.pop(0)
            status = os.path.join(status_dir, op_key(op) + ".json")
            if resume and os.path.exists(status):
                done += 1
                continue  # generated by an earlier, interrupted run
            for stale in (status, status + ".part"):
                if os.path.exists(stale):
                    os.remove(stale)
            pid = os.fork()
            if pid == 0:
                code = 0
                try:
                    run_op(op, a.out, a.max_samples, status)
                except BaseException:  # noqa: BLE001
                    traceback.print_exc()
                    code = 1
                os._exit(code)
            running[pid] = (op, status, time.time())
        pid, _ = os.waitpid(-1, os.WNOHANG)
        if pid == 0:
            now = time.time()
            for pid, (op, status, t0) in list(running.items()):
                if now - t0 > a.timeout:
                    os.kill(pid, signal.SIGKILL)
                    killed[pid] = True
            time.sleep(0.05)
            continue
        if pid not in running:
            continue
        op, status, _ = running.pop(pid)
        done += 1
        note = " (killed after %.0fs)" % a.timeout if killed.pop(pid, False) else ""
        print("[%d/%d] %s%s" % (done, len(ops), op_key(op), note), flush=True)
        if note:
            part = status + ".part"
            result = json.load(open(part)) if os.path.exists(part) else {"op": op_key(op), "cases": [], "skipped": []}
            result["skipped"].append({"op": op.name, "variant": op.variant_test_name, "sample": None,
                                      "reason": "generation timed out after %.0fs (later samples not generated)" % a.timeout})
            with open(status, "w") as f:
                json.dump(result, f)
        elif not os.path.exists(status):
            with open(status, "w") as f:
                json.dump({"op": op_key(op), "cases": [], "skipped": [
                    {"op": op.name, "variant": op.variant_test_name, "sample": None,
                     "reason": "generator process died"}]}, f)

    cases, skipped, per_op = [], [], {}
    for i, op in enumerate(ops):
        path = os.path.join(status_dir, op_key(op) + ".json")
        if not os.path.exists(path):  # --summary-only over an interrupted run
            r = {"op": op_key(op), "cases": [], "skipped": [
                {"op": op.name, "variant": op.variant_test_name, "sample": None,
                 "reason": "not generated: the generator run was stopped before this OpInfo"}]}
        else:
            r = json.load(open(path))
        cases += r["cases"]
        skipped += r["skipped"]
        per_op[r["op"]] = {"cases": len(r["cases"]), "skipped": len(r["skipped"])}
    reasons = {}
    for s in skipped:
        key = s["reason"].split(":")[0]
        reasons[key] = reasons.get(key, 0) + 1
    summary = {
        "torch": torch.__version__,
        "opinfos": len(ops),
        "max_samples": a.max_samples,
        "cases": len(cases),
        "skipped": len(skipped),
        "opinfos_with_cases": sum(1 for v in per_op.values() if v["cases"]),
        "skip_reasons": dict(sorted(reasons.items(), key=lambda kv: -kv[1])),
        "seconds": round(time.time() - start, 1),
        "per_op": per_op,
    }
    with open(os.path.join(a.out, "skipped.json"), "w") as f:
        json.dump(sorted(skipped, key=lambda s: (s["op"], s["variant"], s["sample"] if s["sample"] is not None else -1)), f, indent=1)
    with open(os.path.join(a.out, "summary.json"), "w") as f:
        json.dump(summary, f, indent=1)
    shutil.rmtree(os.path.join(a.out, ".tmp"), ignore_errors=True)
    print("%d OpInfos: %d cases, %d samples skipped (%.0fs); see %s/skipped.json" %
          (len(ops), len(cases), len(skipped), time.time() - start, a.out))


if __name__ == "__main__":
    main()
