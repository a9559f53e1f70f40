// ThreadSanitizer support for the concurrency tests, linked into those tests (read only when
// the binary is built with --config=tsan).
//
// pthreadpool (and XNNPACK) come as static archives built by setup.sh without TSan
// instrumentation: the hand-off of a parallel job to the pool's threads (atomics and futexes
// inside pthreadpool) is invisible to TSan, so every kernel argument a worker reads looks like
// a race with the caller that wrote it. Reports with a pthreadpool frame are suppressed; what
// TSan checks is Ember's own concurrency (Modules, Programs, the data file registry, the
// XNNPACK packed-weight tables and their mutex). Work split across a pool is checked by the
// tests' bit-identical results instead.
extern "C" const char* __tsan_default_suppressions() {
  return "race:pthreadpool_\n"
         "race:libpthreadpool\n"
         "race:xnn_\n";
}
