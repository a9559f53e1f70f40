#!/usr/bin/env python3
"""Runs the external-model suite written by export_external.py through Ember and writes
docs/model-coverage.md.

For every OUT/<name>/ (model.pt2, input_<i>.npy, output_<i>.npy, meta.json) and every backend
(portable kernels; --backend xnnpack): `ember export`, `ember run` on the inputs, relative L2
of every output against the eager PyTorch reference (pass: max over outputs <= 1e-4), the
op count and delegated share from the export's `partition:` line, and the latency from
`ember bench --iterations N --json`. Status is one of
  pass | mismatch (rel. L2 over the bound) | export error (message) | run error (message) |
  crash (the process died from a signal; never acceptable)

Usage: run_external.py [--models OUT] [--ember bazel-bin/tools/ember] [--iterations 20]
                       [--doc docs/model-coverage.md] [--json FILE] [NAME...]
"""
import argparse
import datetime
import json
import os
import re
import signal
import subprocess
import sys
import tempfile

import numpy as np

TOLERANCE = 1e-4
BACKENDS = [("portable", []), ("xnnpack", ["--backend", "xnnpack"])]


def sh(cmd, timeout):
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, "", f"timed out after {timeout} s"
    return p.returncode, p.stdout, p.stderr


def died(rc):
    """A signal: negative return code from subprocess, or 128+N from a shell."""
    return rc is not None and (rc < 0 or rc >= 128)


def signal_name(rc):
    n = -rc if rc < 0 else rc - 128
    try:
        return signal.Signals(n).name
    except ValueError:
        return f"signal {n}"


def first_line(text, limit=300):
    """The message without its source-location lines ("at File ...")."""
    lines = [l.strip() for l in text.strip().splitlines() if l.strip()]
    lines = [l for l in lines if not l.startswith("at ") and l != "..."]
    s = " ".join(lines[:4]) if lines else "(no message)"
    return s[:limit]


# Failures whose fix is owned by other work, shown beside the status: name -> note. (The first
# round's entries were all fixed.)
KNOWN = {}


def rel_l2(got, ref):
    if got.shape != ref.shape:
        return float("inf")
    g, r = got.astype(np.float64).ravel(), ref.astype(np.float64).ravel()
    return float(np.linalg.norm(g - r) / max(np.linalg.norm(r), 1e-12))


def count_files(d, prefix):
    n = 0
    while os.path.exists(os.path.join(d, f"{prefix}{n}.npy")):
        n += 1
    return n


def check(ember, d, backend, flags, iterations, work):
    res = {"status": "", "detail": "", "ops": None, "delegated": None, "rel_l2": None, "latency_ms": None}
    pte = os.path.join(work, f"model_{backend}.pte")
    rc, out, err = sh([ember, "export", os.path.join(d, "model.pt2"), "-o", pte] + flags, 600)
    if died(rc):
        res.update(status="crash", detail=f"ember export died with {signal_name(rc)}: {first_line(err)}")
        return res
    if rc != 0:
        res.update(status="export error", detail=first_line(err or out))
        return res
    m = re.search(r"^partition:(.*)$", out, re.M)
    if m:
        delegated = sum(int(x) for x in re.findall(r"(\d+) ops in \d+ delegates?", m.group(1)))
        portable = int(re.search(r"portable (\d+) ops", m.group(1)).group(1))
        res["ops"] = delegated + portable
        res["delegated"] = delegated / max(res["ops"], 1)
    outdir = os.path.join(work, f"out_{backend}")
    os.makedirs(outdir, exist_ok=True)
    inputs = []
    for i in range(count_files(d, "input_")):
        inputs += ["--input", os.path.join(d, f"input_{i}.npy")]
    rc, out, err = sh([ember, "run", pte] + inputs + ["--output-dir", outdir], 600)
    if died(rc):
        res.update(status="crash", detail=f"ember run died with {signal_name(rc)}")
        return res
    if rc != 0:
        res.update(status="run error", detail=first_line(err or out))
        return res
    errs = []
    for i in range(count_files(d, "output_")):
        p = os.path.join(outdir, f"output_{i}.npy")
        ref = np.load(os.path.join(d, f"output_{i}.npy"))
        errs.append(rel_l2(np.load(p), ref) if os.path.exists(p) else float("inf"))
    res["rel_l2"] = max(errs) if errs else float("inf")
    if not res["rel_l2"] <= TOLERANCE:
        res.update(status="mismatch", detail=f"rel. L2 {res['rel_l2']:.3g} > {TOLERANCE:g} "
                   f"(per output: {', '.join(f'{e:.3g}' for e in errs)})")
        return res
    res["status"] = "pass"
    if iterations == 0:
        return res
    js = os.path.join(work, f"bench_{backend}.json")
    rc, out, err = sh([ember, "bench", pte, "--iterations", str(iterations), "--json", js], 600)
    if died(rc):
        res.update(status="crash", detail=f"ember bench died with {signal_name(rc)}")
    elif rc == 0:
        with open(js) as f:
            res["latency_ms"] = json.load(f)["latency_ms"]["median"]
    else:
        res["detail"] = "bench failed: " + first_line(err or out)
    return res


def fmt(v, spec):
    return "–" if v is None else format(v, spec)


def count_statuses(results):
    counts = {b: {} for b, _ in BACKENDS}
    for r in results:
        for b, _ in BACKENDS:
            s = r[b]["status"]
            counts[b][s] = counts[b].get(s, 0) + 1
    return counts


def versions(results):
    return ", ".join(sorted({str(r["meta"].get("torch")) for r in results})) or "?"


def library_versions(results):
    libs = {}
    for r in results:
        for k, v in (r["meta"].get("libraries") or {}).items():
            libs.setdefault(k, set()).add(v)
    return ", ".join(f"{k} {'/'.join(sorted(v))}" for k, v in sorted(libs.items())) or "versions not recorded"


def write_doc(path, results, also, args):
    n = len(results)
    lines = [
        "# External-model coverage",
        "",
        "Public architectures nobody here wrote (Hugging Face `transformers`, `torchvision`, `timm`,",
        "`diffusers`, plain `torch.nn`), in small configurations with seeded random weights, exported with",
        f"`torch.export` (PyTorch {versions(results)}; {library_versions(results)}) and run through Ember with the",
        "portable kernels and with",
        f"`--backend xnnpack`. Pass: every output within relative L2 {TOLERANCE:g} of eager PyTorch float32.",
        "Ops: nodes after Ember's passes (from the export's `partition:` line, delegated + portable);",
        "delegated: the share of those XNNPACK took. Latency: median of `ember bench --iterations "
        f"{args.iterations}` (1 thread, ms) on the machine that generated this page (a shared 2-core VM:",
        "other jobs ran beside it, so treat single figures as noisy).",
    ]
    if also:
        lines += [
            f"The same models exported by PyTorch {versions(list(also.values()))} "
            f"({library_versions(list(also.values()))}; a `.pt2` of another schema version, written on the",
            "device machine) are checked the same way; their status is in the last column.",
        ]
    lines += [
        "",
        f"Generated {datetime.datetime.utcnow().strftime('%Y-%m-%d %H:%M UTC')} on {os.uname().nodename} "
        f"({os.cpu_count()} CPUs). {n} architectures.",
        "",
    ]
    for label, rs in [(f"PyTorch {versions(results)}", results)] + (
            [(f"PyTorch {versions(list(also.values()))}", list(also.values()))] if also else []):
        counts = count_statuses(rs)
        for b, _ in BACKENDS:
            lines.append(f"- **{b}** ({label}): " + ", ".join(f"{k} {v}" for k, v in sorted(counts[b].items()))
                         + f" (of {len(rs)})")
    also_head = f" | PyTorch {versions(list(also.values()))} (portable / xnnpack)" if also else ""
    lines += [
        "",
        "| model | source | architecture | params | portable | xnnpack | ops | delegated | rel. L2 (portable / xnnpack) | latency ms (portable / xnnpack)"
        + also_head + " |",
        "|---|---|---|---:|---|---|---:|---:|---|---|" + ("---|" if also else ""),
    ]
    for r in results:
        p, x, m = r["portable"], r["xnnpack"], r["meta"]
        row = (
            f"| {r['name']} | {m.get('source', '?')} | {m.get('arch', '?')} | {m.get('params', 0):,} | "
            f"{p['status']} | {x['status']} | {fmt(p['ops'], 'd')} | "
            f"{fmt(x['delegated'] * 100 if x['delegated'] is not None else None, '.0f')}{'%' if x['delegated'] is not None else ''} | "
            f"{fmt(p['rel_l2'], '.1e')} / {fmt(x['rel_l2'], '.1e')} | "
            f"{fmt(p['latency_ms'], '.3f')} / {fmt(x['latency_ms'], '.3f')} |")
        if also:
            a = also.get(r["name"])
            row += f" {a['portable']['status']} / {a['xnnpack']['status']} |" if a else " not exported |"
        lines.append(row)
    fails = [(r["name"], "", b, r[b]) for r in results for b, _ in BACKENDS if r[b]["status"] != "pass"]
    fails += [(r["name"], f", PyTorch {r['meta'].get('torch')}", b, r[b]) for r in also.values()
              for b, _ in BACKENDS if r[b]["status"] != "pass"]
    lines += ["", "## Failures", ""]
    if not fails:
        lines.append("None.")
    for name, version, b, res in fails:
        known = f" ({KNOWN[name]})" if name in KNOWN else ""
        lines.append(f"- `{name}` ({b}{version}): **{res['status']}**: {res['detail'].replace('|', '/')}{known}")
    notes = [(r["name"], b, r[b]["detail"]) for r in results for b, _ in BACKENDS
             if r[b]["status"] == "pass" and r[b]["detail"]]
    for name, b, d in notes:
        lines.append(f"- `{name}` ({b}): passes; {d}")
    also_cmd = f" --also {args.also}" if also else ""
    lines += [
        "",
        "## Regenerate",
        "",
        "```",
        "bazel build -c opt //tools:ember",
        "pip install torch torchvision timm transformers diffusers numpy   # only for the generator",
        f"python3 tools/models/export_external.py -o {args.models}",
    ]
    if args.also.endswith(".json"):
        lines += ["# on the device machine (the other PyTorch version; tools/bench/make_device_bundle.sh carries ember):",
                  f"python3 tools/models/export_external.py -o {args.also[:-5]}",
                  f"python3 tools/models/run_external.py --models {args.also[:-5]} --iterations 0 --doc '' "
                  f"--json {args.also}"]
    elif also:
        lines.append(f"python3 tools/models/export_external.py -o {args.also}   # with the other PyTorch version")
    lines += [
        f"python3 tools/models/run_external.py --models {args.models}{also_cmd} --iterations {args.iterations} "
        "--doc docs/model-coverage.md",
        "```",
        "",
        "Per model, by hand: `bazel-bin/tools/ember export M/model.pt2 -o m.pte [--backend xnnpack]`,",
        "`bazel-bin/tools/ember run m.pte --input M/input_0.npy ... --output-dir D` (compare D/output_<i>.npy",
        f"with M/output_<i>.npy), `bazel-bin/tools/ember bench m.pte --iterations {args.iterations} --json b.json`.",
        "A CI subset with its data checked in runs in `//test/models:external_models_test`.",
        "",
    ]
    with open(path, "w") as f:
        f.write("\n".join(lines))


def run_set(ember, models_dir, names, iterations):
    """Checks every model of one directory on both backends; returns the results in order."""
    names = names or sorted(n for n in os.listdir(models_dir)
                            if os.path.exists(os.path.join(models_dir, n, "model.pt2")))
    results = []
    with tempfile.TemporaryDirectory() as work_root:
        for name in names:
            d = os.path.join(models_dir, name)
            meta = {}
            if os.path.exists(os.path.join(d, "meta.json")):
                with open(os.path.join(d, "meta.json")) as f:
                    meta = json.load(f)
            r = {"name": name, "meta": {k: meta.get(k) for k in ("arch", "source", "params", "torch", "libraries")}}
            for b, flags in BACKENDS:
                work = os.path.join(work_root, name)
                os.makedirs(work, exist_ok=True)
                r[b] = check(ember, d, b, flags, iterations, work)
                print(f"{name:18s} {b:9s} {r[b]['status']:12s} ops {r[b]['ops']} "
                      f"rel_l2 {r[b]['rel_l2']} latency {r[b]['latency_ms']} {r[b]['detail'][:160]}", flush=True)
            results.append(r)
    return results


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", default="/tmp/ember_external")
    ap.add_argument("--also", default="",
                    help="the same models exported by another PyTorch version: a directory (each is exported, run "
                         "and compared the same way, no latency) or the --json file of such a run made elsewhere "
                         "(the device machine, which has that version); the page gets its column")
    ap.add_argument("--ember", default="bazel-bin/tools/ember")
    ap.add_argument("--iterations", type=int, default=20)
    ap.add_argument("--doc", default="docs/model-coverage.md")
    ap.add_argument("--json", default="")
    ap.add_argument("names", nargs="*")
    args = ap.parse_args()
    results = run_set(args.ember, args.models, args.names, args.iterations)
    also = {}
    if args.also.endswith(".json"):
        with open(args.also) as f:
            also = {r["name"]: r for r in json.load(f)["results"]}
    elif args.also:
        also = {r["name"]: r for r in run_set(args.ember, args.also, args.names, 0)}
    # Keep the generator's order (families together).
    order = {}
    try:
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        from external import MODELS  # noqa: E402 (needs torch; only the order is used)
        order = {n: i for i, n in enumerate(MODELS)}
    except Exception:
        pass
    results.sort(key=lambda r: order.get(r["name"], len(order)))
    if args.doc:
        write_doc(args.doc, results, also, args)
        print("wrote", args.doc)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"results": results, "also": also}, f, indent=1)
    crashes = [r["name"] for rs in (results, list(also.values())) for r in rs for b, _ in BACKENDS
               if r[b]["status"] == "crash"]
    if crashes:
        print("CRASHES:", " ".join(crashes))
    return 1 if crashes else 0


if __name__ == "__main__":
    sys.exit(main())
