#!/usr/bin/env python3
"""Counts gtest cases from Bazel's test XML files and prints 'N passed, M failed'.

Usage: test_summary.py [--bazel-log FILE] BAZEL_TESTLOGS_DIR [TARGET ...]
With --bazel-log, targets Bazel reported as "FAILED TO BUILD" or "NO STATUS" count as
failed even when an old test.xml exists.
Only the listed test targets' XML files are read (stale logs of removed targets are ignored).
Exits 1 when any case failed or a test target produced no XML (e.g. it crashed).
"""
import os
import sys
import xml.etree.ElementTree as ET


def main() -> int:
    args = sys.argv[1:]
    not_run = set()
    if len(args) >= 2 and args[0] == "--bazel-log":
        with open(args[1], errors="replace") as log:
            for line in log:
                parts = line.split()
                if parts and parts[0].startswith("//") and ("FAILED TO BUILD" in line or "NO STATUS" in line):
                    not_run.add(parts[0])
        args = args[2:]
    root = args[0] if args else "bazel-testlogs"
    targets = args[1:]
    passed = failed = skipped = 0
    broken = []
    paths = []
    for target in targets:
        if target in not_run:
            print(f"NOT RUN (failed to build or did not run): {target}")
            failed += 1
            continue
        package, _, name = target.lstrip("/").partition(":")
        path = os.path.join(root, package, name, "test.xml")
        if os.path.exists(path):
            paths.append(path)
        else:
            broken.append(path)
    for path in paths:
        try:
            tree = ET.parse(path)
        except ET.ParseError:
            broken.append(path)
            continue
        cases = list(tree.iter("testcase"))
        if not cases:
            # Bazel writes a synthetic XML without test cases when a binary crashes.
            broken.append(path)
            continue
        for case in cases:
            if case.find("failure") is not None or case.find("error") is not None:
                failed += 1
                print(f"FAILED: {case.get('classname')}.{case.get('name')}  ({path})")
            elif (case.get("result") in ("skipped", "suppressed") or case.get("status") == "notrun"
                  or case.find("skipped") is not None):  # GTEST_SKIP, or a DISABLED_ test
                skipped += 1
            else:
                passed += 1
    for path in broken:
        print(f"BROKEN (no test cases in {path})")
        failed += 1
    print(f"{passed} passed, {failed} failed, {skipped} skipped")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
