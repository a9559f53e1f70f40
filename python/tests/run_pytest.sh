#!/usr/bin/env bash
# //python:python_test: assembles the ember package (ember/*.py + the Bazel-built libember.so
# and command line, laid out as in the wheel: ember/_native/) in a temporary directory and
# runs pytest with Debian's interpreter, writing JUnit XML where Bazel expects the test's results (test.sh counts its cases).
set -euo pipefail
here="${TEST_SRCDIR}/${TEST_WORKSPACE}"
pkg="${TEST_TMPDIR}/site/ember"
mkdir -p "$pkg/_native"
cp "$here"/python/ember/*.py "$pkg/"
cp "$here/python/libember.so" "$pkg/_native/"
cp "$here/tools/ember" "$pkg/_native/ember"
xml="${XML_OUTPUT_FILE:-${TEST_TMPDIR}/pytest.xml}"
# ldd's whole output first: `ldd | grep -q` under pipefail fails at random when grep exits
# before ldd has written everything (SIGPIPE), and the ASan build then ran instead of skipping.
libs=$(ldd "$pkg/_native/libember.so")
if [[ "$libs" == *libasan* ]]; then
  # An ASan-built library cannot load into Debian's (uninstrumented) interpreter.
  cat >"$xml" <<XML
<testsuites><testsuite name="python" tests="1" skipped="1"><testcase classname="python" name="bindings_under_asan"><skipped message="the Python interpreter is not built with ASan"/></testcase></testsuite></testsuites>
XML
  echo "skipped under ASan: the Python interpreter is not instrumented"
  exit 0
fi
if [ -z "${EMBER_SHARED_DIR:-}" ]; then  # test.sh sets it; else ../shared beside the checkout
  checkout=$(dirname "$(readlink -f "$here/python/tests/test_ember.py")")/../..
  [ -d "$checkout/../shared/models" ] && export EMBER_SHARED_DIR=$(cd "$checkout/../shared" && pwd)
fi
export PYTHONPATH="${TEST_TMPDIR}/site"
cd "$TEST_TMPDIR"
exec /usr/bin/python3 -m pytest -q -p no:cacheprovider --junitxml="$xml" "$here/python/tests/test_ember.py"
