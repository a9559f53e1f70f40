"""Compiler flags for test code."""

# The runtime is built with -fno-rtti, so UBSan's vptr check (part of
# -fsanitize=undefined in --config=asan) cannot work on its classes: test code compiled
# with RTTI would reference typeinfo the runtime never emits. Everything else in
# -fsanitize=undefined stays on. Harmless without sanitizers.
TEST_COPTS = ["-fno-sanitize=vptr"]
