#!/usr/bin/env python3
"""Memory plans of exported programs against their lower bound, as Markdown rows.

For every model.pt2 under each DIR (searched recursively; the row's name is its directory
relative to DIR), runs `ember export` (portable kernels) and reads its `memory plan` line:
the planned arena (shared activation region + inputs/state), the lower bound (peak of
simultaneously live bytes + inputs/state), the best greedy ordering's shared size before the
local search, and the search's steps. Prints one table per DIR and a summary; exits 1 if a
plan is over --max-ratio of its bound (docs/memory-plans.md's tables come from this).

Usage: memory_plan_table.py [--ember bazel-bin/tools/ember] [--max-ratio 1.02] DIR...
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

PLAN = re.compile(r"memory plan \((?P<strategy>.*), (?P<steps>\d+) search steps\): arena (?P<arena>\d+) bytes = "
                  r"shared (?P<shared>\d+) \+ inputs/state (?P<fixed>\d+); lower bound (?P<bound>\d+) "
                  r"\(best greedy ordering: shared (?P<greedy>\d+)\)")


def plan_of(ember, pt2, work):
    p = subprocess.run([ember, "export", pt2, "-o", os.path.join(work, "m.pte")], capture_output=True, text=True)
    m = PLAN.search(p.stdout)
    if p.returncode != 0 or not m:
        return None, (p.stderr or p.stdout).strip().splitlines()[-1:] or ["no output"]
    return {k: (v if k == "strategy" else int(v)) for k, v in m.groupdict().items()}, None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ember", default="bazel-bin/tools/ember")
    ap.add_argument("--max-ratio", type=float, default=1.02)
    ap.add_argument("dirs", nargs="+")
    args = ap.parse_args()
    worst, over, failed, total = 1.0, [], [], 0
    with tempfile.TemporaryDirectory() as work:
        for root in args.dirs:
            found = sorted(os.path.relpath(d, root) for d, _, files in os.walk(root) if "model.pt2" in files)
            print(f"\n{root}: {len(found)} programs\n")
            print("| model | planned arena (B) | shared | inputs/state | lower bound | vs bound | best greedy ordering "
                  "(shared) | search steps |")
            print("|---|---:|---:|---:|---:|---:|---:|---:|")
            for name in found:
                plan, err = plan_of(args.ember, os.path.join(root, name, "model.pt2"), work)
                total += 1
                if plan is None:
                    failed.append(name)
                    print(f"| {name} | export failed: {err[0][:120]} |||||||")
                    continue
                ratio = plan["arena"] / plan["bound"] if plan["bound"] else 1.0
                worst = max(worst, ratio)
                if ratio > args.max_ratio:
                    over.append(name)
                greedy_ratio = (plan["greedy"] + plan["fixed"]) / plan["bound"] if plan["bound"] else 1.0
                print(f"| {name} | {plan['arena']:,} | {plan['shared']:,} | {plan['fixed']:,} | {plan['bound']:,} | "
                      f"{ratio:.3f}x | {plan['greedy']:,} ({greedy_ratio:.3f}x, {plan['strategy']}) | "
                      f"{plan['steps']} |", flush=True)
    print(f"\n{total} programs: worst plan {worst:.3f}x its lower bound; over {args.max_ratio}x: "
          f"{', '.join(over) or 'none'}; export failures: {', '.join(failed) or 'none'}")
    return 1 if over or failed else 0


if __name__ == "__main__":
    sys.exit(main())
