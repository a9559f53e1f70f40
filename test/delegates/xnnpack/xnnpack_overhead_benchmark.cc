// Ember's overhead over raw XNNPACK for one partition: conv 3x3 (relu fused) -> max pool 2x2.
//
//   BM_RawXnnpack      the same subgraph built by hand with the XNNPACK subgraph API, NHWC
//                      buffers, setup once, xnn_invoke_runtime per iteration.
//   BM_EmberAsIs       the same graph as a blob through Backend::execute with NHWC Ember tensors
//                      (layout AsIs): Ember's dispatch/validation overhead alone.
//   BM_EmberNchw       NCHW Ember tensors (layout NchwToNhwc): adds the two layout conversions
//                      a PyTorch-layout model pays at the partition boundary.
//   BM_Interleaved     all three alternating in one loop; counters asis_overhead_pct and
//                      nchw_overhead_pct are median per-iteration slowdowns vs raw (robust on a
//                      busy machine).
// Arg: thread count (same pthreadpool size for all). Run:
//   bazel run -c opt //test/delegates/xnnpack:xnnpack_overhead_benchmark -- --benchmark_repetitions=5
#include <benchmark/benchmark.h>
#include <pthreadpool.h>
#include <xnnpack.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <random>
#include <vector>

#include "delegates/xnnpack/runtime/xnnpack_backend.h"
#include "delegates/xnnpack/xnnpack_blob_builder.h"

namespace ember {
namespace xnnpack {
namespace {

constexpr size_t N = 1, C = 32, H = 56, W = 56, O = 32, K = 3;
constexpr size_t PH = H / 2, PW = W / 2;

struct Weights {
  std::vector<float> oihw, ohwi, bias;
  Weights() {
    std::mt19937 rng(1);
    std::uniform_real_distribution<float> d(-0.1f, 0.1f);
    oihw.resize(O * C * K * K);
    for (float& v : oihw) v = d(rng);
    bias.resize(O);
    for (float& v : bias) v = d(rng);
    ohwi = oihw_to_ohwi(oihw.data(), O, C, K, K);
  }
};
const Weights& weights() {
  static Weights w;
  return w;
}

std::vector<float> input_data() {
  std::vector<float> v(N * C * H * W + 16);
  std::mt19937 rng(2);
  std::uniform_real_distribution<float> d(-1, 1);
  for (float& x : v) x = d(rng);
  return v;
}

// The hand-built XNNPACK runtime (NHWC buffers, set up once).
class RawGraph {
 public:
  explicit RawGraph(size_t threads) : x_(input_data()), y_(N * PH * PW * O) {
    xnn_initialize(nullptr);
    pool_ = threads > 1 ? pthreadpool_create(threads) : nullptr;
    xnn_subgraph_t sg = nullptr;
    xnn_create_subgraph(2, 0, &sg);
    const size_t in_dims[4] = {N, H, W, C}, f_dims[4] = {O, K, K, C}, b_dims[1] = {O}, c_dims[4] = {N, H, W, O},
                 p_dims[4] = {N, PH, PW, O};
    uint32_t in = 0, f = 0, b = 0, conv = 0, out = 1;
    xnn_define_tensor_value(sg, xnn_datatype_fp32, 4, in_dims, nullptr, 0, XNN_VALUE_FLAG_EXTERNAL_INPUT, &in);
    xnn_define_tensor_value(sg, xnn_datatype_fp32, 4, p_dims, nullptr, 1, XNN_VALUE_FLAG_EXTERNAL_OUTPUT, &out);
    xnn_define_tensor_value(sg, xnn_datatype_fp32, 4, f_dims, weights().ohwi.data(), XNN_INVALID_VALUE_ID, 0, &f);
    xnn_define_tensor_value(sg, xnn_datatype_fp32, 1, b_dims, weights().bias.data(), XNN_INVALID_VALUE_ID, 0, &b);
    xnn_define_tensor_value(sg, xnn_datatype_fp32, 4, c_dims, nullptr, XNN_INVALID_VALUE_ID, 0, &conv);
    xnn_define_convolution_2d(sg, 1, 1, 1, 1, K, K, 1, 1, 1, 1, 1, C, O, 0.0f, __builtin_inff(), in, f, b, conv, 0);
    xnn_define_max_pooling_2d(sg, 0, 0, 0, 0, 2, 2, 2, 2, 1, 1, -__builtin_inff(), __builtin_inff(), conv, out, 0);
    ok_ = xnn_create_runtime_v2(sg, pool_, 0, &rt_) == xnn_status_success;
    xnn_delete_subgraph(sg);
    xnn_external_value ext[2] = {{0, x_.data()}, {1, y_.data()}};
    ok_ = ok_ && xnn_reshape_runtime(rt_) == xnn_status_success;
    ok_ = ok_ && xnn_setup_runtime_v2(rt_, 2, ext) == xnn_status_success;
  }
  ~RawGraph() {
    if (rt_) xnn_delete_runtime(rt_);
    if (pool_) pthreadpool_destroy(pool_);
  }
  bool ok() const { return ok_; }
  void run() { xnn_invoke_runtime(rt_); }

 private:
  std::vector<float> x_, y_;
  pthreadpool_t pool_ = nullptr;
  xnn_runtime_t rt_ = nullptr;
  bool ok_ = false;
};

// The same graph as a blob run through Backend::execute.
class EmberGraph {
 public:
  EmberGraph(size_t threads, bool nchw) : mem_(8 << 20), alloc_(mem_.data(), mem_.size()), x_(input_data()),
                                          y_(N * PH * PW * O + 16) {
    const fb::Layout layout = nchw ? fb::Layout::NchwToNhwc : fb::Layout::AsIs;
    XnnBlobBuilder bb;
    uint32_t in = bb.input({N, H, W, C}, layout);
    XnnNodeParams cp;
    cp.padding = {{1, 1, 1, 1}};
    cp.output_min = 0.0f;
    uint32_t t = bb.conv2d_from_oihw(in, weights().oihw.data(), O, C, K, K, weights().bias.data(), cp);
    XnnNodeParams pp;
    pp.kernel = {{2, 2}};
    pp.stride = {{2, 2}};
    bb.mark_output(bb.node(fb::OpType::MaxPooling2d, {t}, pp), layout);
    blob_ = bb.build();
    BackendInitContext ictx{&alloc_, nullptr, nullptr, &diag_};
    const uint8_t nt[4] = {uint8_t(threads), 0, 0, 0};
    CompileSpecView spec{"num_threads", Span<const uint8_t>(nt, 4)};
    Result<void*> h = xnnpack_backend().init(ictx, Span<const uint8_t>(blob_.data(), blob_.size()),
                                             Span<const CompileSpecView>(&spec, 1));
    if (!h.ok()) return;
    handle_ = *h;
    static const int64_t xs_nchw[4] = {N, C, H, W}, xs_nhwc[4] = {N, H, W, C};
    for (int i = 0; i < 4; ++i) {
      xs_[i] = nchw ? xs_nchw[i] : xs_nhwc[i];
      ys_[i] = nchw ? (int64_t[]){N, O, PH, PW}[i] : (int64_t[]){N, PH, PW, O}[i];
    }
    xt_.rank = yt_.rank = 4;
    xt_.sizes = xs_;
    xt_.max_sizes = xs_;
    xt_.data = x_.data();
    xt_.capacity_bytes = x_.size() * sizeof(float);
    yt_.sizes = ys_;
    yt_.max_sizes = ys_;
    yt_.data = y_.data();
    yt_.capacity_bytes = y_.size() * sizeof(float);
    xv_.tag = yv_.tag = ValueTag::Tensor;
    xv_.as_tensor = &xt_;
    yv_.as_tensor = &yt_;
    args_[0] = &xv_;
    args_[1] = &yv_;
  }
  ~EmberGraph() {
    if (handle_) xnnpack_backend().destroy(handle_);
  }
  bool ok() const { return handle_ != nullptr; }
  const char* message() const { return diag_.text(); }
  bool run() {
    BackendExecuteContext ectx{nullptr, nullptr, &diag_};
    return xnnpack_backend().execute(ectx, handle_, args_, 2) == Error::Ok;
  }

 private:
  std::vector<uint8_t> mem_;
  MemoryAllocator alloc_;
  Diagnostic diag_;
  std::vector<uint8_t> blob_;
  void* handle_ = nullptr;
  std::vector<float> x_, y_;
  int64_t xs_[4], ys_[4];
  Tensor xt_, yt_;
  EValue xv_, yv_;
  EValue* args_[2];
};

void BM_RawXnnpack(benchmark::State& state) {
  RawGraph raw(size_t(state.range(0)));
  if (!raw.ok()) return state.SkipWithError("raw XNNPACK setup failed");
  for (auto _ : state) {
    raw.run();
    benchmark::ClobberMemory();
  }
}

void run_ember(benchmark::State& state, bool nchw) {
  EmberGraph ember(size_t(state.range(0)), nchw);
  if (!ember.ok()) return state.SkipWithError(ember.message());
  for (auto _ : state) {
    if (!ember.run()) return state.SkipWithError(ember.message());
    benchmark::ClobberMemory();
  }
}

void BM_EmberAsIs(benchmark::State& state) { run_ember(state, false); }
void BM_EmberNchw(benchmark::State& state) { run_ember(state, true); }

// Raw and Ember (AsIs and NCHW) alternate inside one loop, so machine noise hits all of them
// alike; counters report the median per-iteration ratios as overhead percentages.
void BM_Interleaved(benchmark::State& state) {
  const size_t threads = size_t(state.range(0));
  RawGraph raw(threads);
  EmberGraph as_is(threads, false), nchw(threads, true);
  if (!raw.ok() || !as_is.ok() || !nchw.ok()) return state.SkipWithError("setup failed");
  std::vector<double> r_asis, r_nchw;
  using clock = std::chrono::steady_clock;
  for (auto _ : state) {
    const auto t0 = clock::now();
    raw.run();
    const auto t1 = clock::now();
    as_is.run();
    const auto t2 = clock::now();
    nchw.run();
    const auto t3 = clock::now();
    const double raw_s = std::chrono::duration<double>(t1 - t0).count();
    r_asis.push_back(std::chrono::duration<double>(t2 - t1).count() / raw_s);
    r_nchw.push_back(std::chrono::duration<double>(t3 - t2).count() / raw_s);
  }
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0.0 : v[v.size() / 2];
  };
  state.counters["asis_overhead_pct"] = (median(r_asis) - 1.0) * 100.0;
  state.counters["nchw_overhead_pct"] = (median(r_nchw) - 1.0) * 100.0;
}

// On a shared machine the minimum over repetitions is the stable figure; compare "_min" rows.
double min_of(const std::vector<double>& v) {
  double m = v.empty() ? 0 : v[0];
  for (double x : v) m = x < m ? x : m;
  return m;
}
#define EMBER_XNN_BENCH(fn) \
  BENCHMARK(fn)->Arg(1)->Arg(2)->Unit(benchmark::kMicrosecond)->UseRealTime()->ComputeStatistics("min", min_of)
EMBER_XNN_BENCH(BM_RawXnnpack);
EMBER_XNN_BENCH(BM_EmberAsIs);
EMBER_XNN_BENCH(BM_EmberNchw);
BENCHMARK(BM_Interleaved)->Arg(1)->Arg(2)->Unit(benchmark::kMicrosecond)->UseRealTime();

}  // namespace
}  // namespace xnnpack
}  // namespace ember
