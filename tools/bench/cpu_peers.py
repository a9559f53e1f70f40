#!/usr/bin/env python3
"""CPU: Ember vs onnxruntime vs ExecuTorch on the same weights and the same torch.export program.

For each model, one `torch.export` program (model.pt2) and the eager module it came from are
made once; then
  - Ember:        `ember export model.pt2 --backend xnnpack` (and the portable kernels for
                  vit_tiny), timed with `ember bench --threads T --json` (its median);
  - onnxruntime:  `torch.onnx.export(eager, dynamo=False, opset 17)`, CPUExecutionProvider,
                  intra_op_num_threads=T, inter_op_num_threads=1, ORT_ENABLE_ALL;
  - ExecuTorch:   `to_edge_transform_and_lower(ep, partitioner=[XnnpackPartitioner()])
                  .to_executorch()` of the same loaded model.pt2, run with the pip wheel's
                  pybindings (`_load_for_executorch_from_buffer`, threads through
                  `_unsafe_reset_threadpool(T)`), in a subprocess (crash-proof, and it may run
                  under another interpreter: --et-python / --et-path);
each with W warm-up calls then the median of N, and every output is compared with the eager
PyTorch output on the same input (relative L2), and Ember's with the peers'.

Models (definitions reused from the project, not new ones):
  mobilenet_v2, resnet18, efficientnet_b0: torchvision, weights=None, torch.manual_seed(0),
      input torch.randn(1,3,224,224) drawn after the model, exactly as
      tools/models/export_torchvision.py makes them (device_compare.sh's archives);
  vit_tiny, bert_tiny: the project's archives ../shared/models/<name> (torchvision ViT,
      4 layers, 192 wide; transformers BertModel, hidden 128, 2 layers, ids + mask [1,32]);
      the eager module is `ep.module()` of that archive (same weights, same program);
  optional extras: vit_tiny_timm (timm vit_tiny_patch16_224, 12 layers, seeded),
      bert_tiny_128 (transformers BertModel(BertConfig(hidden_size=128, num_hidden_layers=2,
      num_attention_heads=2, intermediate_size=512)), seeded, input ids [1,128]).

Modes:
  cpu_peers.py [opts]              prepare into --workdir (cached) and time
  cpu_peers.py --prepare DIR       only write DIR/<model>/{model.pt2,input_*.npy,output_0.npy,
                                   model.onnx,model.et.pte,*.log}
  cpu_peers.py --from DIR [opts]   only time what DIR holds (no torchvision/timm/transformers/
                                   executorch exporter needed; the ExecuTorch runtime is)
Options: --ember PATH (default bazel-bin/tools/ember), --models a,b,..., --threads 1,2,
  --iterations 20, --warmup 3, --workdir DIR (default /tmp/ember_cpu_peers), --json FILE,
  --shared DIR (default ../shared/models beside the checkout), --et-python PY, --et-path DIR,
  --render JSON (re-print the tables of an earlier --json file).
"""
import argparse
import glob
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
TORCHVISION = ("mobilenet_v2", "resnet18", "efficientnet_b0")
SHARED = ("vit_tiny", "bert_tiny")
EXTRAS = ("vit_tiny_timm", "bert_tiny_128")
DEFAULT_MODELS = TORCHVISION + SHARED
PORTABLE_TOO = ("vit_tiny", "vit_tiny_timm")   # the XNNPACK-vs-portable ratio
PRETTY = {"mobilenet_v2": "MobileNetV2", "resnet18": "ResNet18", "efficientnet_b0": "EfficientNet-B0",
          "vit_tiny": "ViT-tiny (4 layers)", "bert_tiny": "BERT-tiny (seq 32)",
          "vit_tiny_timm": "ViT-tiny (timm, 12 layers)", "bert_tiny_128": "BERT-tiny (seq 128)"}


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def short(e):
    s = f"{type(e).__name__}: {str(e).strip()}" if isinstance(e, BaseException) else str(e).strip()
    s = s.splitlines()[-1] if s else "failed"
    return re.sub(r"\s+", " ", s)[:160].replace("|", "/")


def rel_l2(out, ref):
    out, ref = np.asarray(out, np.float64), np.asarray(ref, np.float64)
    if out.shape != ref.shape:
        return float("nan")
    return float(np.linalg.norm(out - ref) / max(np.linalg.norm(ref), 1e-30))


def timed(fn, warmup, iterations):
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(iterations):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e3)
    return {"min": min(times), "median": statistics.median(times), "mean": statistics.mean(times)}


# ----------------------------------------------------------------------------- models

def build(name, shared_dir):
    """(eager module, example args, torch.export program) of one model."""
    import torch
    if name in TORCHVISION:  # as tools/models/export_torchvision.py
        import torchvision
        torch.manual_seed(0)
        model = getattr(torchvision.models, name)(weights=None).eval()
        args = (torch.randn(1, 3, 224, 224),)
        return model, args, torch.export.export(model, args)
    if name in SHARED:
        mdir = os.path.join(shared_dir, name)
        if not os.path.exists(os.path.join(mdir, "model.pt2")):
            raise FileNotFoundError(f"{mdir}/model.pt2 (pass --shared DIR)")
        ep = torch.export.load(os.path.join(mdir, "model.pt2"))
        args = tuple(torch.from_numpy(np.load(p)) for p in sorted(glob.glob(os.path.join(mdir, "input_*.npy"))))
        return ep.module(), args, ep
    if name == "vit_tiny_timm":
        import timm
        torch.manual_seed(0)
        model = timm.create_model("vit_tiny_patch16_224", pretrained=False).eval()
        args = (torch.randn(1, 3, 224, 224),)
        return model, args, torch.export.export(model, args)
    if name == "bert_tiny_128":
        from transformers import BertConfig, BertModel
        torch.manual_seed(0)
        cfg = BertConfig(hidden_size=128, num_hidden_layers=2, num_attention_heads=2, intermediate_size=512)
        model = BertModel(cfg).eval()

        class LastHidden(torch.nn.Module):  # a plain tensor out, for every runtime
            def __init__(self, m):
                super().__init__()
                self.m = m

            def forward(self, ids):
                return self.m(input_ids=ids).last_hidden_state

        model = LastHidden(model).eval()
        args = (torch.randint(0, cfg.vocab_size, (1, 128), dtype=torch.int64),)
        return model, args, torch.export.export(model, args)
    raise ValueError(f"unknown model {name}")


def first_tensor(o):
    while isinstance(o, (tuple, list)):
        o = o[0]
    if hasattr(o, "last_hidden_state"):
        o = o.last_hidden_state
    return o.detach().numpy()


def prepare(name, out_root, shared_dir, et_cmd, et_env):
    """Writes OUT/<name>/: model.pt2, input_*.npy, output_0.npy, model.onnx, model.et.pte."""
    import torch
    out = os.path.join(out_root, name)
    os.makedirs(out, exist_ok=True)
    status = {}
    pt2 = os.path.join(out, "model.pt2")
    if not os.path.exists(pt2):
        t0 = time.time()
        model, args, ep = build(name, shared_dir)
        with torch.no_grad():
            ref = first_tensor(model(*args))
        for i, a in enumerate(args):
            np.save(os.path.join(out, f"input_{i}.npy"), a.numpy())
        np.save(os.path.join(out, "output_0.npy"), ref)
        src = os.path.join(shared_dir, name, "model.pt2")
        if name in SHARED:
            shutil.copyfile(src, pt2)     # the very same archive
        else:
            torch.export.save(ep, pt2)
        log(f"{name}: model.pt2 in {time.time() - t0:.1f} s")
        status["onnx_model"] = (model, args)
    onnx_path = os.path.join(out, "model.onnx")
    if not os.path.exists(onnx_path) and not os.path.exists(onnx_path + ".failed"):
        try:
            if "onnx_model" in status:
                model, args = status["onnx_model"]
            else:
                model, args, _ = build(name, shared_dir)
            t0 = time.time()
            kw = {}
            if isinstance(model, torch.fx.GraphModule):  # ep.module() refuses .train(False)
                kw["training"] = torch.onnx.TrainingMode.PRESERVE
            torch.onnx.export(model, args, onnx_path, dynamo=False, opset_version=17, **kw)
            log(f"{name}: model.onnx in {time.time() - t0:.1f} s")
        except Exception as e:
            with open(onnx_path + ".failed", "w") as f:
                f.write(short(e))
            log(f"{name}: ONNX export failed: {short(e)}")
    et_path = os.path.join(out, "model.et.pte")
    if not os.path.exists(et_path) and not os.path.exists(et_path + ".failed"):
        t0 = time.time()
        r = et_worker(et_cmd, et_env, ["export", pt2, et_path], timeout=1800)
        if r.get("ok"):
            log(f"{name}: model.et.pte in {time.time() - t0:.1f} s ({r.get('partition', '')})")
            with open(et_path + ".json", "w") as f:
                json.dump(r, f)
        else:
            with open(et_path + ".failed", "w") as f:
                f.write(r.get("error", "failed"))
            log(f"{name}: ExecuTorch export failed: {r.get('error')}")


# ----------------------------------------------------------------------------- ExecuTorch worker

def et_worker(et_cmd, et_env, argv, timeout=900):
    """Runs this script's ExecuTorch worker under the ExecuTorch interpreter; returns its JSON."""
    if et_cmd is None:
        return {"ok": False, "error": "executorch not importable (pip install executorch, or --et-python)"}
    try:
        p = subprocess.run(et_cmd + [os.path.abspath(__file__), "--_et"] + argv, capture_output=True,
                           text=True, timeout=timeout, env=et_env)
    except subprocess.TimeoutExpired:
        return {"ok": False, "error": f"timed out after {timeout} s"}
    lines = [l for l in p.stdout.splitlines() if l.startswith("{")]
    if lines:
        return json.loads(lines[-1])
    err = [l for l in (p.stderr or "").splitlines() if l.strip() and "Warning" not in l]
    return {"ok": False, "error": f"exit {p.returncode}: " + short(err[-1] if err else "no output")}


def op_name(target):
    m = re.search(r"<EdgeOpOverload: ([\w.]+)>", str(target))
    name = m.group(1) if m else getattr(target, "__name__", str(target))
    parts = name.split(".")
    return parts[1] if len(parts) >= 2 and parts[0] in ("aten", "dim_order_ops", "quantized_decomposed") else name


def et_main(argv):
    """--_et export PT2 OUT.pte | --_et bench PTE THREADS WARMUP ITERS OUT.npy INPUT.npy..."""
    import logging
    logging.disable(logging.WARNING)
    try:
        import torch
        if argv[0] == "export":
            from executorch.exir import to_edge_transform_and_lower
            from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
            ep = torch.export.load(argv[1])
            edge = to_edge_transform_and_lower(ep, partitioner=[XnnpackPartitioner()])
            gm = edge.exported_program().graph_module
            delegates = sum(1 for n in gm.graph.nodes if n.op == "call_function"
                            and "executorch_call_delegate" in str(n.target))
            rest = sorted({op_name(n.target) for n in gm.graph.nodes if n.op == "call_function"
                           and "executorch_call_delegate" not in str(n.target) and "getitem" not in str(n.target)})
            others = sum(1 for n in gm.graph.nodes if n.op == "call_function"
                         and "executorch_call_delegate" not in str(n.target) and "getitem" not in str(n.target))
            prog = edge.to_executorch()
            with open(argv[2], "wb") as f:
                f.write(prog.buffer)
            import executorch
            ver = getattr(executorch, "__version__", None)
            if ver is None:
                from importlib.metadata import version
                ver = version("executorch")
            print(json.dumps({"ok": True, "executorch": ver, "torch": torch.__version__,
                              "partition": f"{delegates} XNNPACK delegates, {others} ops outside ({', '.join(rest)})"}))
            return
        if argv[0] == "bench":  # all thread counts in one process: the import costs seconds
            from executorch.extension.pybindings import portable_lib as pl
            pte, threads, warmup, iters, out_npy = argv[1], argv[2], int(argv[3]), int(argv[4]), argv[5]
            with open(pte, "rb") as f:
                buf = f.read()   # kept alive: the loaded program points into it
            ins = [torch.from_numpy(np.load(p)) for p in argv[6:]]
            res = {"ok": True, "latency_ms": {}, "note": ""}
            for t in [int(x) for x in threads.split(",")]:
                if os.environ.get("EMBER_PEERS_PIN") == "1":
                    pin_to(t)   # before the pool is made: its threads inherit the cores
                if hasattr(pl, "_unsafe_reset_threadpool"):
                    pl._unsafe_reset_threadpool(t)   # before loading, so XNNPACK's runtime gets it
                    got = pl._threadpool_get_thread_count() if hasattr(pl, "_threadpool_get_thread_count") else t
                    if got != t:
                        res["note"] += f"asked {t} threads, threadpool has {got}; "
                else:
                    res["note"] = "no _unsafe_reset_threadpool: default threads"
                try:
                    m = pl._load_for_executorch_from_buffer(buf)
                    out = m.forward(ins)
                    if not os.path.exists(out_npy):
                        np.save(out_npy, first_tensor(out))
                    res["latency_ms"][str(t)] = timed(lambda: m.forward(ins), warmup, iters)
                    del m
                except Exception as e:
                    res["latency_ms"][str(t)] = {"error": short(e)}
            print(json.dumps(res))
            return
        raise ValueError(argv[0])
    except BaseException as e:  # reported in the table's cell
        print(json.dumps({"ok": False, "error": short(e)}))


def find_et(args):
    """The command (and environment) that imports executorch, or None."""
    env = dict(os.environ)
    if args.et_path:
        env["PYTHONPATH"] = os.path.abspath(args.et_path) + os.pathsep + env.get("PYTHONPATH", "")
    cands = [args.et_python] if args.et_python else [sys.executable, "/tmp/et-venv/bin/python"]
    for py in cands:
        if py and os.path.exists(py) and subprocess.run(
                [py, "-c", "import executorch.extension.pybindings.portable_lib"], env=env,
                capture_output=True).returncode == 0:
            return [py], env
    return None, env


# ----------------------------------------------------------------------------- timing

def ember_env(ember):
    env = dict(os.environ)
    lib = os.path.join(os.path.dirname(os.path.abspath(ember)), "..", "lib")
    if os.path.isdir(lib):  # a make_device_bundle.sh bundle: bin/ember + lib/*.so
        env["LD_LIBRARY_PATH"] = os.path.abspath(lib) + os.pathsep + env.get("LD_LIBRARY_PATH", "")
    return env


def ember_export(ember, env, pt2, pte, backend):
    """Exports (cached by mtime); returns (partition line or '', error or None)."""
    logf = pte + ".export.log"
    fresh = (os.path.exists(pte) and os.path.exists(logf) and os.path.getmtime(pte) >= os.path.getmtime(pt2)
             and os.path.getmtime(pte) >= os.path.getmtime(ember))
    if not fresh:
        cmd = [ember, "export", pt2, "-o", pte] + (["--backend", backend] if backend != "portable" else [])
        p = subprocess.run(cmd, capture_output=True, text=True, env=env)
        with open(logf, "w") as f:
            f.write(p.stdout + p.stderr)
        if p.returncode != 0:
            if os.path.exists(pte):
                os.remove(pte)
            return "", "export failed: " + short(p.stderr or p.stdout)
    text = open(logf).read()
    part = [l for l in text.splitlines() if l.startswith("partition")]
    return (part[0] if part else ""), None


def ember_run(ember, env, pte, inputs, outdir):
    shutil.rmtree(outdir, ignore_errors=True)
    os.makedirs(outdir)
    cmd = [ember, "run", pte, "--output-dir", outdir]
    for i in inputs:
        cmd += ["--input", i]
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if p.returncode != 0:
        raise RuntimeError("run failed: " + short(p.stderr or p.stdout))
    return np.load(os.path.join(outdir, "output_0.npy"))


ALL_CORES = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []


def pin_to(threads):
    """Pins this process (and the processes and threads it starts next) to its last `threads`
    cores, so a T-thread measurement always runs on the same T cores (the last ones: core 0
    tends to take the machine's interrupts)."""
    if ALL_CORES and threads <= len(ALL_CORES):
        os.sched_setaffinity(0, set(ALL_CORES[len(ALL_CORES) - threads:]))


def unpin():
    if ALL_CORES:
        os.sched_setaffinity(0, set(ALL_CORES))


def combine(rounds):
    """One cell from the cells of several rounds: the median of their medians, the smallest
    minimum; an error if every round failed."""
    ok = [r for r in rounds if "median" in r]
    if not ok:
        return rounds[0] if rounds else {"error": "not measured"}
    return {"min": min(r["min"] for r in ok), "median": statistics.median(r["median"] for r in ok),
            "mean": statistics.mean(r["mean"] for r in ok), "rounds": len(ok)}


def ember_bench(ember, env, pte, threads, warmup, iters, json_path):
    cmd = [ember, "bench", pte, "--warmup", str(warmup), "--iterations", str(iters),
           "--threads", str(threads), "--json", json_path]
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if p.returncode != 0:
        raise RuntimeError("bench failed: " + short(p.stderr or p.stdout))
    with open(json_path) as f:
        return json.load(f)["latency_ms"]


def measure(name, mdir, work, args, et_cmd, et_env):
    """All figures of one prepared model directory."""
    res = {"model": name, "threads": {}, "rel_l2": {}, "notes": {}}
    inputs = sorted(glob.glob(os.path.join(mdir, "input_*.npy")))
    ref = np.load(os.path.join(mdir, "output_0.npy"))
    outs = {}
    # Ember
    env = ember_env(args.ember)
    pt2 = os.path.join(mdir, "model.pt2")
    ember_ptes = {}
    for backend in ["xnnpack"] + (["portable"] if name in PORTABLE_TOO else []):
        pte = os.path.join(work, f"{name}.{backend}.pte")
        part, err = ember_export(args.ember, env, pt2, pte, backend)
        res["notes"][f"ember_{backend}_partition"] = part
        if err:
            res["notes"][f"ember_{backend}"] = err
            continue
        try:
            outs[f"ember_{backend}"] = ember_run(args.ember, env, pte, inputs, os.path.join(work, "run"))
            ember_ptes[backend] = pte
        except Exception as e:
            res["notes"][f"ember_{backend}"] = short(e)
    # onnxruntime
    onnx_path = os.path.join(mdir, "model.onnx")
    sess = {}
    try:
        import onnxruntime as ort
        if not os.path.exists(onnx_path):
            msg = open(onnx_path + ".failed").read() if os.path.exists(onnx_path + ".failed") else "no model.onnx"
            raise RuntimeError(msg)
        feeds = None
        for t in args.threads:
            so = ort.SessionOptions()
            so.intra_op_num_threads = t
            so.inter_op_num_threads = 1
            so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
            sess[t] = ort.InferenceSession(onnx_path, so, providers=["CPUExecutionProvider"])
            if feeds is None:
                feeds = {i.name: np.load(p) for i, p in zip(sess[t].get_inputs(), inputs)}
                outs["ort"] = sess[t].run(None, feeds)[0]
        res["notes"]["ort_version"] = ort.__version__
    except Exception as e:
        res["notes"]["ort"] = short(e)
    # ExecuTorch
    et_pte = os.path.join(mdir, "model.et.pte")
    if not os.path.exists(et_pte):
        res["notes"]["et"] = (open(et_pte + ".failed").read() if os.path.exists(et_pte + ".failed")
                              else "no model.et.pte")
    elif os.path.exists(et_pte + ".json"):
        meta = json.load(open(et_pte + ".json"))
        res["notes"]["et_partition"] = meta.get("partition", "")
        res["notes"]["et_version"] = meta.get("executorch", "")
    # timing, in rounds (--rounds): in each, ExecuTorch (one subprocess, every thread count),
    # then per thread count Ember (CLI) and onnxruntime (in process). A burst of load on a
    # shared machine then hits one round of every runtime rather than all of one runtime's
    # calls. With --pin a T-thread measurement runs on the same T cores for every runtime.
    cells = {str(t): {} for t in args.threads}   # thread count -> runtime -> cells of each round
    et_env_run = dict(et_env, EMBER_PEERS_PIN="1" if args.pin else "0")
    for rnd in range(args.rounds):
        if os.path.exists(et_pte):
            npy = os.path.join(work, f"{name}.et.out.npy")
            if os.path.exists(npy):
                os.remove(npy)
            r = et_worker(et_cmd, et_env_run, ["bench", et_pte, ",".join(map(str, args.threads)), str(args.warmup),
                                               str(args.iterations), npy] + inputs)
            if r.get("ok"):
                for t, cell in r["latency_ms"].items():
                    cells.setdefault(t, {}).setdefault("et", []).append(cell)
                if r.get("note"):
                    res["notes"]["et_threads"] = r["note"]
                if os.path.exists(npy):
                    outs["et"] = np.load(npy)
            else:
                for t in args.threads:
                    cells[str(t)].setdefault("et", []).append({"error": r.get("error", "failed")})
        for t in args.threads:
            if args.pin:
                pin_to(t)
            got = cells[str(t)]
            for backend, pte in ember_ptes.items():
                if backend == "portable" and t != 1:
                    continue   # the ratio is at 1 thread
                try:
                    cell = ember_bench(args.ember, env, pte, t, args.warmup, args.iterations,
                                       os.path.join(work, f"{name}.{backend}.t{t}.json"))
                except Exception as e:
                    cell = {"error": short(e)}
                got.setdefault(f"ember_{backend}", []).append(cell)
            if t in sess:
                try:
                    cell = timed(lambda: sess[t].run(None, feeds), args.warmup, args.iterations)
                except Exception as e:
                    cell = {"error": short(e)}
                got.setdefault("ort", []).append(cell)
            unpin()
    for t in args.threads:
        row = {k: combine(v) for k, v in cells[str(t)].items()}
        res["threads"][str(t)] = row
        log(f"{name} t{t}: " + ", ".join(f"{k} {v['median']:.2f}" if "median" in v else f"{k} ({v['error']})"
                                          for k, v in row.items()))
    # agreement
    for k, o in outs.items():
        res["rel_l2"][f"{k} vs eager"] = rel_l2(o, ref)
    if "ember_xnnpack" in outs:
        for k in ("ort", "et"):
            if k in outs:
                res["rel_l2"][f"ember_xnnpack vs {k}"] = rel_l2(outs["ember_xnnpack"], outs[k])
    return res


# ----------------------------------------------------------------------------- report

def cell(v):
    if v is None:
        return "-"
    if "median" in v:
        return f"{v['median']:.2f} ({v['min']:.2f})"
    return "failed: " + v["error"]


def report(results, args):
    lines = []
    lines.append("| model | threads | Ember XNNPACK ms | onnxruntime ms | ExecuTorch ms | Ember / best peer |")
    lines.append("|---|---|---|---|---|---|")
    for r in results:
        for t in args.threads:
            row = r["threads"].get(str(t), {})
            e, o, x = row.get("ember_xnnpack"), row.get("ort"), row.get("et")
            if o is None and "ort" in r["notes"]:
                o = {"error": r["notes"]["ort"]}
            if x is None and "et" in r["notes"]:
                x = {"error": r["notes"]["et"]}
            if e is None and "ember_xnnpack" in r["notes"]:
                e = {"error": r["notes"]["ember_xnnpack"]}
            peers = [v["median"] for v in (o, x) if v and "median" in v]
            ratio = "-"
            if e and "median" in e and peers:
                q = e["median"] / min(peers)
                qmin = e["min"] / min(v["min"] for v in (o, x) if v and "min" in v)
                ratio = f"{q:.2f}" + (" **slower than 0.8x**" if q > 1.25 else "") + f" (min: {qmin:.2f})"
            lines.append(f"| {PRETTY.get(r['model'], r['model'])} | {t} | {cell(e)} | {cell(o)} | {cell(x)} | {ratio} |")
    lines.append("")
    rounds, pinned = getattr(args, "rounds", 1), getattr(args, "pin", False)
    how = (f" in each of {rounds} interleaved rounds (cell: median of the rounds' medians, smallest minimum)"
           if rounds > 1 else "") + (", each T-thread figure on the same T cores" if pinned else "")
    lines.append(f"Median (min) ms of {args.iterations} calls after {args.warmup} warm-ups{how}. "
                 "Ember / best peer = Ember XNNPACK median / the faster peer's median (> 1: Ember slower; "
                 "> 1.25: slower than 0.8x of the best peer's speed); the same ratio of the minimums in parentheses.")
    for r in results:
        row = r["threads"].get("1", {})
        x, p = row.get("ember_xnnpack"), row.get("ember_portable")
        if p is not None:
            if x and p and "median" in x and "median" in p:
                lines.append(f"{PRETTY.get(r['model'], r['model'])}, Ember XNNPACK vs portable at 1 thread: "
                             f"{x['median']:.2f} vs {p['median']:.2f} ms = {p['median'] / x['median']:.2f}x "
                             f"(issue target >= 3x)")
            else:
                lines.append(f"{r['model']}: portable at 1 thread: {cell(p)}")
    lines.append("")
    lines.append("| model | Ember XNNPACK vs eager | onnxruntime vs eager | ExecuTorch vs eager | "
                 "Ember vs onnxruntime | Ember vs ExecuTorch | Ember portable vs eager |")
    lines.append("|---|---|---|---|---|---|---|")
    for r in results:
        g = r["rel_l2"].get
        f = lambda k: f"{g(k):.1e}" if g(k) is not None else "-"
        lines.append(f"| {PRETTY.get(r['model'], r['model'])} | {f('ember_xnnpack vs eager')} | {f('ort vs eager')} | "
                     f"{f('et vs eager')} | {f('ember_xnnpack vs ort')} | {f('ember_xnnpack vs et')} | "
                     f"{f('ember_portable vs eager')} |")
    lines.append("")
    lines.append("Partitions:")
    for r in results:
        n = r["notes"]
        lines.append(f"- {r['model']}: Ember `{n.get('ember_xnnpack_partition', '-')}`; ExecuTorch "
                     f"{n.get('et_partition', '-')}" + (f"; ExecuTorch threads: {n['et_threads']}" if "et_threads" in n else ""))
    return "\n".join(lines)


def merge_et(results, path):
    """Fills the ExecuTorch cells of `results` from the --json file at `path` (same models and
    thread counts; figures of another call on the same machine, marked in the notes)."""
    with open(path) as f:
        other = {r["model"]: r for r in json.load(f)["results"]}
    for r in results:
        o = other.get(r["model"])
        if o is None:
            continue
        for t, row in r["threads"].items():
            if "et" in o["threads"].get(t, {}):
                row["et"] = o["threads"][t]["et"]
        for k, v in o["notes"].items():
            if k.startswith("et"):
                r["notes"][k] = v
        if "et" not in o["notes"]:
            r["notes"].pop("et", None)  # this call's "executorch not importable" no longer applies
        if "et vs eager" in o["rel_l2"]:
            r["rel_l2"]["et vs eager"] = o["rel_l2"]["et vs eager"]
        r["notes"]["et_merged_from"] = os.path.basename(path)


def main():
    import warnings
    warnings.filterwarnings("ignore")
    if len(sys.argv) > 1 and sys.argv[1] == "--_et":
        return et_main(sys.argv[2:])
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ember", default=os.path.join(ROOT, "bazel-bin/tools/ember"))
    ap.add_argument("--models", default=",".join(DEFAULT_MODELS),
                    help=f"comma list of {', '.join(DEFAULT_MODELS + EXTRAS)}")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--iterations", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=1,
                    help="measure every runtime this many times, interleaved; cells are the median of "
                         "the rounds' medians and the smallest minimum")
    ap.add_argument("--pin", action="store_true",
                    help="run each T-thread measurement on this process's last T cores (all runtimes)")
    ap.add_argument("--workdir", default="/tmp/ember_cpu_peers")
    ap.add_argument("--json")
    ap.add_argument("--shared", default=os.path.join(ROOT, "..", "shared", "models"))
    ap.add_argument("--prepare", metavar="DIR", help="only export every model's programs to DIR")
    ap.add_argument("--from", dest="from_dir", metavar="DIR", help="only time the programs in DIR")
    ap.add_argument("--et-python", help="interpreter that imports executorch (default: this one, "
                                        "else /tmp/et-venv/bin/python)")
    ap.add_argument("--et-path", help="directory prepended to PYTHONPATH for the ExecuTorch worker")
    ap.add_argument("--render", metavar="JSON", help="only re-print the tables of a --json file")
    ap.add_argument("--merge-et", metavar="JSON",
                    help="with --render: take the ExecuTorch cells (latency, agreement with eager, "
                         "partition, version) from this other --json file, e.g. of a device call that "
                         "could carry only the ExecuTorch wheels")
    args = ap.parse_args()
    args.threads = [int(t) for t in args.threads.split(",")]
    if args.render:
        with open(args.render) as f:
            saved = json.load(f)
        for k in ("threads", "warmup", "iterations"):
            setattr(args, k, saved[k])
        args.rounds, args.pin = saved.get("rounds", 1), saved.get("pin", False)
        if args.merge_et:
            merge_et(saved["results"], args.merge_et)
        print(report(saved["results"], args))
        return
    models = [m for m in args.models.split(",") if m]
    et_cmd, et_env = find_et(args)
    log(f"ExecuTorch interpreter: {et_cmd[0] if et_cmd else 'none (executorch not importable)'}")

    src = args.prepare or args.from_dir or os.path.join(args.workdir, "models")
    if not args.from_dir:
        for m in models:
            try:
                prepare(m, src, args.shared, et_cmd, et_env)
            except Exception as e:
                log(f"{m}: prepare failed: {short(e)}")
        if args.prepare:
            return
    if not os.path.exists(args.ember):
        sys.exit(f"no ember binary at {args.ember} (bazel build -c opt //tools:ember, or --ember PATH)")
    work = os.path.join(args.workdir, "ember")
    os.makedirs(work, exist_ok=True)
    results = []
    for m in models:
        mdir = os.path.join(src, m)
        if not os.path.exists(os.path.join(mdir, "model.pt2")):
            log(f"{m}: no {mdir}/model.pt2, skipped")
            continue
        try:
            results.append(measure(m, mdir, work, args, et_cmd, et_env))
        except Exception as e:
            log(f"{m}: failed: {short(e)}")
    text = report(results, args)
    print(text)
    if args.json:
        import platform
        with open(args.json, "w") as f:
            json.dump({"host": platform.node(), "cpu_count": os.cpu_count(), "threads": args.threads,
                       "warmup": args.warmup, "iterations": args.iterations, "rounds": args.rounds,
                       "pin": args.pin, "results": results,
                       "table": text}, f, indent=1)


if __name__ == "__main__":
    main()
