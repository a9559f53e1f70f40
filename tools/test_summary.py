#!/usr/bin/env python3
"""Counts gtest cases from Bazel's test XML files and prints 'N passed, M failed'.

Usage: test_summary.py BAZEL_TESTLOGS_DIR [TARGET ...]
Only the listed test targets' XML files are read (stale logs of removed targets are ignored).
Exits 1 when any case failed or a test target produced no XML (e.g. it crashed).
"""
import os
import sys
import xml.etree.ElementTree as ET


def main() -> int:
    root = sys.argv[1] if len(sys.argv) > 1 else "bazel-testlogs"
    targets = sys.argv[2:]
    passed = failed = skipped = 0
    broken = []
    paths = []
    for target in targets:
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
            elif case.get("result") == "skipped" or case.find("skipped") is not None:
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
