// End-to-end: programs built with ProgramBuilder, run with the test kernels.
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "runtime/executor/method.h"
#include "runtime/program/program.h"
#include "test/support/fake_backend.h"
#include "test/support/program_builder.h"
#include "test/support/test_programs.h"

namespace ember {
namespace {

using testing::Harness;
using testing::MethodBuilder;
using testing::ProgramBuilder;
using testing::PteBytes;
using testing::TensorHolder;

bool contains(const char* haystack, const char* needle) { return std::strstr(haystack, needle) != nullptr; }

std::vector<int64_t> sizes_of(const Tensor& t) { return std::vector<int64_t>(t.sizes, t.sizes + t.rank); }

// --- Arithmetic ------------------------------------------------------------------------------

TEST(MethodTest, AddBroadcastsAConstant) {
  ProgramBuilder pb;
  testing::add_broadcast_method(pb, "forward", false);
  Harness h;
  ASSERT_EQ(h.load(pb.build()), Error::Ok) << h.message();
  ASSERT_EQ(h.load_method("forward"), Error::Ok) << h.message();
  std::vector<float> x(12);
  for (int i = 0; i < 12; ++i) x[i] = static_cast<float>(i);
  TensorHolder in(ScalarType::Float32, {4, 3}, x.data());
  ASSERT_EQ(h.method().set_input(0, in.value), Error::Ok) << h.method().last_error_message();
  ASSERT_EQ(h.method().execute(), Error::Ok) << h.method().last_error_message();
  const Tensor& out = *h.method().output(0).as_tensor;
  EXPECT_EQ(sizes_of(out), (std::vector<int64_t>{4, 3}));
  const float bias[3] = {10, 20, 30};
  for (int i = 0; i < 12; ++i) EXPECT_EQ(out.data_as<float>()[i], i + bias[i % 3]) << i;
}

TEST(MethodTest, AddBroadcastsBothOperandsAndRanks) {
  ProgramBuilder pb;
  MethodBuilder& m = pb.method("forward");
  int32_t a = m.input_tensor(ScalarType::Float32, {2, 1, 3});
  int32_t b = m.input_tensor(ScalarType::Float32, {4, 1});
  int32_t out = m.planned_tensor(ScalarType::Float32, {2, 4, 3});
  m.kernel("test::add", "default", {a, b, out});
  m.set_inputs({static_cast<uint32_t>(a), static_cast<uint32_t>(b)}).set_outputs({static_cast<uint32_t>(out)});
  Harness h;
  ASSERT_EQ(h.load(pb.build()), Error::Ok) << h.message();
  ASSERT_EQ(h.load_method("forward"), Error::Ok) << h.message();
  float av[6] = {1, 2, 3, 4, 5, 6};
  float bv[4] = {100, 200, 300, 400};
  TensorHolder ta(ScalarType::Float32, {2, 1, 3}, av);
  TensorHolder tb(ScalarType::Float32, {4, 1}, bv);
  ASSERT_EQ(h.method().set_input(0, ta.value), Error::Ok);
  ASSERT_EQ(h.method().set_input(1, tb.value), Error::Ok);
  ASSERT_EQ(h.method().execute(), Error::Ok) << h.method().last_error_message();
  const float* o = h.method().output(0).as_tensor->data_as<float>();
  for (int i = 0; i < 2; ++i) {
    for (int j = 0; j < 4; ++j) {
      for (int k = 0; k < 3; ++k) {
        EXPECT_EQ(o[(i * 4 + j) * 3 + k], av[i * 3 + k] + bv[j]) << i << "," << j << "," << k;
      }
    }
  }
}

TEST(MethodTest, Int64AddUsesTheDtypeSpecialisedKernel) {
  ProgramBuilder pb;
  MethodBuilder& m = pb.method("forward");
  int32_t a = m.input_tensor(ScalarType::Int64, {3});
  int32_t b = m.constant_tensor(ScalarType::Int64, {1}, std::vector<int64_t>{int64_t{1} << 40});
  int32_t out = m.planned_tensor(ScalarType::Int64, {3});
  m.kernel("test::add", "default", {a, b, out});
  m.set_inputs({static_cast<uint32_t>(a)}).set_outputs({static_cast<uint32_t>(out)});
  Harness h;
  ASSERT_EQ(h.load(pb.build()), Error::Ok) << h.message();
  ASSERT_EQ(h.load_method("forward"), Error::Ok) << h.message();
  int64_t av[3] = {1, -2, 3};
  TensorHolder ta(ScalarType::Int64, {3}, av);
  ASSERT_EQ(h.method().set_input(0, ta.value), Error::Ok);
  ASSERT_EQ(h.method().execute(), Error::Ok);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(h.method().output(0).as_tensor->data_as<int64_t>()[i], av[i] + (int64_t{1} << 40));
}

TEST(MethodTest, Matmul) {
  ProgramBuilder pb;
  testing::matmul_method(pb, "mm");
  Harness h;
  ASSERT_EQ(h.load(pb.build()), Error::Ok) << h.message();
  ASSERT_EQ(h.load_method("mm"), Error::Ok) << h.message();
  float a[6] = {1, 2, 3, -1, 0, 0.5f};
  TensorHolder in(ScalarType::Float32, {2, 3}, a);
  ASSERT_EQ(h.method().set_input(0, in.value), Error::Ok);
  ASSERT_EQ(h.method().execute(), Error::Ok) << h.method().last_error_message();
  const Tensor& out = *h.method().output(0).as_tensor;
  EXPECT_EQ(sizes_of(out), (std::vector<int64_t>{2, 4}));
  for (int i = 0; i < 2; ++i) {
    for (int j = 0; j < 4; ++j) {
      float expected = 0;
      for (int k = 0; k < 3; ++k) expected += a[i * 3 + k] * static_cast<float>(k * 4 + j);
      EXPECT_FLOAT_EQ(out.data_as<float>()[i * 4 + j], expected) << i << "," << j;
    }
  }
}

// --- Control flow and state ------------------------------------------------------------------

TEST(MethodTest, JumpFalseLoop) {
  ProgramBuilder pb;
  testing::loop_method(pb, "loop");
  Harness h;
  ASSERT_EQ(h.load(pb.build()), Error::Ok) << h.message();
  ASSERT_EQ(h.load_method("loop"), Error::Ok) << h.message();
  float x[4] = {1, -2, 0.5f, 3};
  TensorHolder in(ScalarType::Float32, {4}, x);
  ASSERT_EQ(h.method().set_input(0, in.value), Error::Ok);
  // Default n = 2 from the program.
  ASSERT_EQ(h.method().execute(), Error::Ok) << h.method().last_error_message();
  EXPECT_EQ(h.method().output(1).as_int, 2);
  for (int k = 0; k < 4; ++k) EXPECT_EQ(h.method().output(0).as_tensor->data_as<float>()[k], 3 * x[k]);
  for (int64_t n : {0, 1, 4, 7, 0}) {
    EValue nv;
    nv.tag = ValueTag::Int;
    nv.as_int = n;
    ASSERT_EQ(h.method().set_input(1, nv), Error::Ok);
    ASSERT_EQ(h.method().execute(), Error::Ok) << h.method().last_error_message();
    EXPECT_EQ(h.method().output(1).as_int, n);  // the loop counter restarts each call (Move)
    for (int k = 0; k < 4; ++k) {
      EXPECT_EQ(h.method().output(0).as_tensor->data_as<float>()[k], static_cast<float>(n + 1) * x[k]) << n;
    }
  }
  EValue wrong;
  wrong.tag = ValueTag::Double;
  wrong.as_double = 2.0;
  EXPECT_EQ(h.method().set_input(1, wrong), Error::InvalidArgument);
  EXPECT_EQ(h.method().set_input(0, wrong), Error::InvalidArgument);  // tensor input
}

TEST(MethodTest, InfiniteLoopIsStopped) {
  ProgramBuilder pb;
  MethodBuilder& m = pb.method("spin");
  uint32_t never = m.bool_value(false);
  m.jump_false(never, 0);
  Harness h;
  ASSERT_EQ(h.load(pb.build()), Error::Ok) << h.message();
  ASSERT_EQ(h.load_method("spin"), Error::Ok) << h.message();
  EXPECT_EQ(h.method().execute(), Error::InvalidProgram);
  EXPECT_TRUE(contains(h.method().last_error_message(), "too many steps")) << h.method().last_error_message();
}

TEST(MethodTest, MutableStatePersistsUntilReset) {
  ProgramBuilder pb;
  testing::counter_method(pb, "counter");
  Harness h;
  ASSERT_EQ(h.load(pb.build()), Error::Ok) << h.message();
  ASSERT_EQ(h.load_method("counter"), Error::Ok) << h.message();
  EXPECT_EQ(h.method().meta().num_inputs(), 0u);
  for (int64_t expected = 1; expected <= 5; ++expected) {
    ASSERT_EQ(h.method().execute(), Error::Ok) << h.method().last_error_message();
    EXPECT_EQ(h.method().output(0).as_tensor->data_as<int64_t>()[0], expected);
  }
  ASSERT_EQ(h.method().reset_state(), Error::Ok);
  ASSERT_EQ(h.method().execute(), Error::Ok);
  EXPECT_EQ(h.method().output(0).as_tensor->data_as<int64_t>()[0], 1);
  ASSERT_EQ(h.method().execute(), Error::Ok);
  EXPECT_EQ(h.method().output(0).as_tensor->data_as<int64_t>()[0], 2);
  // A second Method of the same program has its own state.
  Harness h2;
  ASSERT_EQ(h2.load(pb.build()), Error::Ok);
  ASSERT_EQ(h2.load_method("counter"), Error::Ok);
  ASSERT_EQ(h2.method().execute(), Error::Ok);
  EXPECT_EQ(h2.method().output(0).as_tensor->data_as<int64_t>()[0], 1);
}

TEST(MethodTest, InitialStateComesFromTheProgram) {
  ProgramBuilder pb;
  MethodBuilder& m = pb.method("f");
  int32_t s = m.state_tensor(ScalarType::Int64, {2}, std::vector<int64_t>{40, -7});
  int32_t three = m.int_value(3);
  int32_t out = m.planned_tensor(ScalarType::Int64, {2});
  m.kernel("test::add_scalar_int", "default", {s, three, s});
  m.kernel("test::copy", "default", {s, out});
  m.set_outputs({static_cast<uint32_t>(out)});
  Harness h;
  ASSERT_EQ(h.load(pb.build()), Error::Ok) << h.message();
  ASSERT_EQ(h.load_method("f"), Error::Ok) << h.message();
  ASSERT_EQ(h.method().execute(), Error::Ok);
  ASSERT_EQ(h.method().execute(), Error::Ok);
  EXPECT_EQ(h.method().output(0).as_tensor->data_as<int64_t>()[0], 46);
  EXPECT_EQ(h.method().output(0).as_tensor->data_as<int64_t>()[1], -1);
  ASSERT_EQ(h.method().reset_state(), Error::Ok);
  ASSERT_EQ(h.method().execute(), Error::Ok);
  EXPECT_EQ(h.method().output(0).as_tensor->data_as<int64_t>()[0], 43);
}

// --- Dynamic shapes ----------------------------------------------------------------------------

TEST(MethodTest, BoundedDynamicInput) {
  ProgramBuilder pb;
  testing::add_broadcast_method(pb, "forward", true);
  Harness h;
  ASSERT_EQ(h.load(pb.build()), Error::Ok) << h.message();
  ASSERT_EQ(h.load_method("forward"), Error::Ok) << h.message();
  std::vector<float> x(15);
  for (int i = 0; i < 15; ++i) x[i] = static_cast<float>(i) * 0.5f;
  const float bias[3] = {10, 20, 30};
  for (int64_t batch : {4, 1, 3, 0, 2, 5, 4, 2}) {
    TensorHolder in(ScalarType::Float32, {batch, 3}, x.data());
    Error err = h.method().set_input(0, in.value);
    if (batch > 4) {
      EXPECT_EQ(err, Error::OutOfBounds);
      EXPECT_TRUE(contains(h.method().last_error_message(), "at most 4")) << h.method().last_error_message();
      continue;
    }
    ASSERT_EQ(err, Error::Ok) << batch << ": " << h.method().last_error_message();
    EXPECT_EQ(h.method().input(0).as_tensor->sizes[0], batch);
    ASSERT_EQ(h.method().execute(), Error::Ok) << h.method().last_error_message();
    const Tensor& out = *h.method().output(0).as_tensor;
    EXPECT_EQ(sizes_of(out), (std::vector<int64_t>{batch, 3}));
    for (int i = 0; i < batch * 3; ++i) EXPECT_EQ(out.data_as<float>()[i], x[i] + bias[i % 3]) << batch;
  }
  // Only the dynamic dimension may change.
  TensorHolder wide(ScalarType::Float32, {2, 4}, x.data());
  EXPECT_EQ(h.method().set_input(0, wide.value), Error::OutOfBounds);
  TensorHolder narrow(ScalarType::Float32, {2, 2}, x.data());
  EXPECT_EQ(h.method().set_input(0, narrow.value), Error::Ok);  // within bounds (dynamic)
  EXPECT_EQ(h.method().execute(), Error::InvalidArgument);      // [2,2] + [3] does not broadcast
  EXPECT_TRUE(contains(h.method().last_error_message(), "test::add")) << h.method().last_error_message();
  TensorHolder ok(ScalarType::Float32, {2, 3}, x.data());
  ASSERT_EQ(h.method().set_input(0, ok.value), Error::Ok);
  ASSERT_EQ(h.method().execute(), Error::Ok);
  EXPECT_STREQ(h.method().last_error_message(), "");
}

TEST(MethodTest, StaticOutputCannotGrow) {
  // A kernel asked to produce a bigger output than planned fails with OutOfBounds.
  ProgramBuilder pb;
  MethodBuilder& m = pb.method("f");
  int32_t a = m.input_tensor(ScalarType::Float32, {4});
  int32_t out = m.planned_tensor(ScalarType::Float32, {2});
  m.kernel("test::copy", "default", {a, out});
  m.set_inputs({static_cast<uint32_t>(a)});
  Harness h;
  ASSERT_EQ(h.load(pb.build()), Error::Ok) << h.message();
  ASSERT_EQ(h.load_method("f"), Error::Ok) << h.message();
  EXPECT_EQ(h.method().execute(), Error::OutOfBounds);
  EXPECT_TRUE(contains(h.method().last_error_message(), "test::copy")) << h.method().last_error_message();
}

// --- Inputs and outputs ------------------------------------------------------------------------

TEST(MethodTest, SetInputErrors) {
  ProgramBuilder pb;
  testing::add_broadcast_method(pb, "forward", false);
  Harness h;
  ASSERT_EQ(h.load(pb.build()), Error::Ok) << h.message();
  ASSERT_EQ(h.load_method("forward"), Error::Ok) << h.message();
  Method& m = h.method();
  float data[12] = {0};
  int64_t idata[12] = {0};

  TensorHolder wrong_dtype(ScalarType::Int64, {4, 3}, idata);
  EXPECT_EQ(m.set_input(0, wrong_dtype.value), Error::InvalidArgument);
  EXPECT_TRUE(contains(m.last_error_message(), "must be float32, got int64")) << m.last_error_message();

  TensorHolder wrong_rank(ScalarType::Float32, {12}, data);
  EXPECT_EQ(m.set_input(0, wrong_rank.value), Error::InvalidArgument);
  EXPECT_TRUE(contains(m.last_error_message(), "rank 2")) << m.last_error_message();

  TensorHolder smaller(ScalarType::Float32, {3, 3}, data);  // static: exact sizes only
  EXPECT_EQ(m.set_input(0, smaller.value), Error::InvalidArgument);
  TensorHolder bigger(ScalarType::Float32, {5, 3}, data);
  EXPECT_EQ(m.set_input(0, bigger.value), Error::OutOfBounds);

  TensorHolder null_data(ScalarType::Float32, {4, 3}, nullptr);
  EXPECT_EQ(m.set_input(0, null_data.value), Error::InvalidArgument);
  EXPECT_TRUE(contains(m.last_error_message(), "null data")) << m.last_error_message();

  TensorHolder null_sizes(ScalarType::Float32, {4, 3}, data);
  null_sizes.tensor.sizes = nullptr;
  EXPECT_EQ(m.set_input(0, null_sizes.value), Error::InvalidArgument);

  TensorHolder transposed(ScalarType::Float32, {4, 3}, data);
  uint8_t order[2] = {1, 0};
  transposed.tensor.dim_order = order;
  EXPECT_EQ(m.set_input(0, transposed.value), Error::NotSupported);

  TensorHolder fine(ScalarType::Float32, {4, 3}, data);
  EXPECT_EQ(m.set_input(1, fine.value), Error::InvalidArgument);  // no such input
  EXPECT_TRUE(contains(m.last_error_message(), "does not exist")) << m.last_error_message();
  EXPECT_EQ(m.bind_input(7, fine.tensor), Error::InvalidArgument);

  EValue not_tensor;
  not_tensor.tag = ValueTag::Int;
  EXPECT_EQ(m.set_input(0, not_tensor), Error::InvalidArgument);
  EValue null_tensor;
  null_tensor.tag = ValueTag::Tensor;
  null_tensor.as_tensor = nullptr;
  EXPECT_EQ(m.set_input(0, null_tensor), Error::InvalidArgument);

  // None of the failures changed the planned input; a valid call still works.
  for (int i = 0; i < 12; ++i) data[i] = static_cast<float>(i);
  ASSERT_EQ(m.set_input(0, fine.value), Error::Ok);
  ASSERT_EQ(m.execute(), Error::Ok);
  EXPECT_EQ(m.output(0).as_tensor->data_as<float>()[11], 11 + 30);
}

TEST(MethodTest, SetInputCopiesBindInputDoesNot) {
  ProgramBuilder pb;
  testing::add_broadcast_method(pb, "forward", false);
  Harness h;
  ASSERT_EQ(h.load(pb.build()), Error::Ok) << h.message();
  ASSERT_EQ(h.load_method("forward"), Error::Ok) << h.message();
  Method& m = h.method();
  float data[12] = {0};
  TensorHolder in(ScalarType::Float32, {4, 3}, data);
  ASSERT_EQ(m.set_input(0, in.value), Error::Ok);
  data[0] = 5;  // after the copy: not seen
  ASSERT_EQ(m.execute(), Error::Ok);
  EXPECT_EQ(m.output(0).as_tensor->data_as<float>()[0], 10);
  ASSERT_EQ(m.bind_input(0, in.tensor), Error::Ok);
  EXPECT_EQ(m.input(0).as_tensor->data, data);
  data[0] = 7;  // bound: seen
  ASSERT_EQ(m.execute(), Error::Ok);
  EXPECT_EQ(m.output(0).as_tensor->data_as<float>()[0], 17);
  // set_input returns the input to its planned storage.
  ASSERT_EQ(m.set_input(0, in.value), Error::Ok);
  EXPECT_NE(m.input(0).as_tensor->data, data);
  data[0] = 100;
  ASSERT_EQ(m.execute(), Error::Ok);
  EXPECT_EQ(m.output(0).as_tensor->data_as<float>()[0], 17);
}

TEST(MethodTest, SetOutputBuffer) {
  ProgramBuilder pb;
  testing::add_broadcast_method(pb, "forward", false);
  testing::loop_method(pb, "loop");
  Harness h;
  ASSERT_EQ(h.load(pb.build()), Error::Ok) << h.message();
  ASSERT_EQ(h.load_method("forward"), Error::Ok) << h.message();
  Method& m = h.method();
  float data[12];
  for (int i = 0; i < 12; ++i) data[i] = static_cast<float>(-i);
  TensorHolder in(ScalarType::Float32, {4, 3}, data);
  ASSERT_EQ(m.set_input(0, in.value), Error::Ok);
  void* planned = m.output(0).as_tensor->data;

  float small[11];
  EXPECT_EQ(m.set_output_buffer(0, small, sizeof(small)), Error::OutOfMemory);
  EXPECT_TRUE(contains(m.last_error_message(), "48 bytes")) << m.last_error_message();
  EXPECT_EQ(m.output(0).as_tensor->data, planned);
  EXPECT_EQ(m.set_output_buffer(1, small, sizeof(small)), Error::InvalidArgument);

  float mine[16];
  for (float& f : mine) f = -1000;
  ASSERT_EQ(m.set_output_buffer(0, mine, sizeof(mine)), Error::Ok);
  ASSERT_EQ(m.execute(), Error::Ok);
  EXPECT_EQ(m.output(0).as_tensor->data, mine);
  for (int i = 0; i < 12; ++i) EXPECT_EQ(mine[i], -i + (i % 3 + 1) * 10.0f) << i;
  EXPECT_EQ(mine[12], -1000);  // nothing written past the output

  ASSERT_EQ(m.set_output_buffer(0, nullptr, 0), Error::Ok);  // back to planned memory
  EXPECT_EQ(m.output(0).as_tensor->data, planned);
  mine[0] = 0;
  ASSERT_EQ(m.execute(), Error::Ok);
  EXPECT_EQ(mine[0], 0);
  EXPECT_EQ(static_cast<float*>(planned)[0], 10);

  // An Int output has no buffer.
  ASSERT_EQ(h.load_method("loop"), Error::Ok) << h.message();
  EXPECT_EQ(h.method().set_output_buffer(1, mine, sizeof(mine)), Error::InvalidArgument);
}

// --- Init failures ------------------------------------------------------------------------------

TEST(MethodTest, MissingKernelsAreAllReportedByName) {
  ProgramBuilder pb;
  MethodBuilder& m = pb.method("forward");
  int32_t x = m.input_tensor(ScalarType::Float32, {2});
  int32_t d = m.input_tensor(ScalarType::Float64, {2});
  int32_t y = m.planned_tensor(ScalarType::Float32, {2});
  m.kernel("nope::first", "default", {x, y});
  m.kernel("test::add", "default", {x, x, y});      // exists for float32
  m.kernel("nope::second", "Tensor", {x, y});
  m.kernel("nope::first", "default", {x, y});       // reported once
  m.kernel("test::add", "default", {d, d, d});      // no float64 specialisation
  m.kernel("nope::third", "", {});                  // empty overload means "default"
  Harness h;
  ASSERT_EQ(h.load(pb.build()), Error::Ok) << h.message();
  EXPECT_EQ(h.load_method("forward"), Error::NotSupported);
  std::string msg = h.message();
  EXPECT_NE(msg.find("nope::first.default"), std::string::npos) << msg;
  EXPECT_NE(msg.find("nope::second.Tensor"), std::string::npos) << msg;
  EXPECT_NE(msg.find("nope::third.default"), std::string::npos) << msg;
  EXPECT_NE(msg.find("test::add.default"), std::string::npos) << msg;  // the float64 call
  EXPECT_EQ(msg.find("nope::first.default"), msg.rfind("nope::first.default")) << msg;
  EXPECT_NE(msg.find("'forward'"), std::string::npos) << msg;
}

TEST(MethodTest, UnknownMethodAndMissingMemory) {
  ProgramBuilder pb;
  testing::add_broadcast_method(pb, "forward", false);
  Harness h;
  ASSERT_EQ(h.load(pb.build()), Error::Ok) << h.message();
  EXPECT_EQ(h.load_method("backward"), Error::NotFound);
  Diagnostic diag;
  EXPECT_EQ(h.program().load_method("backward", nullptr, &diag).error(), Error::NotFound);
  EXPECT_TRUE(contains(diag.text(), "'backward'")) << diag.text();
  EXPECT_EQ(h.program().load_method("forward", nullptr, &diag).error(), Error::InvalidArgument);
  MemoryManager no_allocator;
  EXPECT_EQ(h.program().load_method("forward", &no_allocator, &diag).error(), Error::InvalidArgument);
}

// Inits `name` with a method allocator of `method_bytes` and arenas of `arena_sizes`.
Error init_with(const Program& program, const char* name, size_t method_bytes,
                const std::vector<size_t>& arena_sizes, Diagnostic* diag, size_t* used = nullptr,
                bool null_arena_data = false) {
  PteBytes mem(method_bytes);
  std::vector<PteBytes> arenas;
  std::vector<Span<uint8_t>> spans;
  for (size_t s : arena_sizes) arenas.emplace_back(s);
  for (PteBytes& a : arenas) spans.emplace_back(null_arena_data ? nullptr : a.data(), a.size());
  MemoryAllocator alloc(mem.data(), mem.size());
  MemoryManager mm;
  mm.method_allocator = &alloc;
  mm.planned_arenas = Span<Span<uint8_t>>(spans.data(), spans.size());
  diag->message[0] = 0;
  Result<Method> m = program.load_method(name, &mm, diag);
  if (used != nullptr) *used = alloc.used();
  return m.error();
}

std::vector<size_t> arena_sizes(const Program& program, const char* name) {
  std::vector<size_t> sizes;
  MethodMeta meta = *program.method_meta(name);
  for (size_t i = 0; i < meta.num_arenas(); ++i) sizes.push_back(*meta.arena_size(i));
  return sizes;
}

TEST(MethodTest, MethodAllocatorTooSmallReportsBytesNeeded) {
  Harness h;
  ASSERT_EQ(h.load(testing::kitchen_sink_program()), Error::Ok) << h.message();
  testing::FakeBackendStats& stats = testing::fake_backend_stats();
  for (const char* name : {"add", "loop", "counter", "delegate", "values"}) {
    SCOPED_TRACE(name);
    std::vector<size_t> arenas = arena_sizes(h.program(), name);
    Diagnostic diag;
    size_t required = 0;
    ASSERT_EQ(init_with(h.program(), name, 1 << 20, arenas, &diag, &required), Error::Ok) << diag.text();
    ASSERT_GT(required, 0u);
    // Every smaller size fails cleanly with OutOfMemory, reporting a need that is more than
    // what was given and never more than what is really required.
    stats = testing::FakeBackendStats();
    for (size_t given = 0; given < required; ++given) {
      Error err = init_with(h.program(), name, given, arenas, &diag);
      ASSERT_EQ(err, Error::OutOfMemory) << given << ": " << diag.text();
      const char* at_least = std::strstr(diag.text(), "at least ");
      ASSERT_NE(at_least, nullptr) << diag.text();
      size_t needed = 0;
      ASSERT_EQ(std::sscanf(at_least, "at least %zu", &needed), 1) << diag.text();
      EXPECT_GT(needed, given) << diag.text();
      EXPECT_LE(needed, required) << diag.text();
      EXPECT_EQ(stats.destroy_calls, stats.init_ok) << given;  // no leaked delegate handle
    }
    EXPECT_EQ(init_with(h.program(), name, required, arenas, &diag), Error::Ok) << diag.text();
  }
}

TEST(MethodTest, ArenaTooSmallReportsBytesNeeded) {
  ProgramBuilder pb;
  MethodBuilder& m = pb.method("two_arenas");
  int32_t x = m.input_tensor(ScalarType::Float32, {10}, false, 0);
  int32_t y = m.planned_tensor(ScalarType::Float32, {30}, false, 1);
  m.kernel("test::copy", "default", {x, x});
  m.set_inputs({static_cast<uint32_t>(x)}).set_outputs({static_cast<uint32_t>(y)});
  Harness h;
  ASSERT_EQ(h.load(pb.build()), Error::Ok) << h.message();
  std::vector<size_t> arenas = arena_sizes(h.program(), "two_arenas");
  ASSERT_EQ(arenas, (std::vector<size_t>{64, 128}));
  Diagnostic diag;
  ASSERT_EQ(init_with(h.program(), "two_arenas", 1 << 16, arenas, &diag), Error::Ok) << diag.text();
  for (size_t i = 0; i < arenas.size(); ++i) {
    std::vector<size_t> shrunk = arenas;
    shrunk[i] -= 1;
    EXPECT_EQ(init_with(h.program(), "two_arenas", 1 << 16, shrunk, &diag), Error::OutOfMemory);
    char expected[128];
    std::snprintf(expected, sizeof(expected), "planned arena %zu of method 'two_arenas' needs %zu bytes but %zu were given",
                  i, arenas[i], arenas[i] - 1);
    EXPECT_TRUE(contains(diag.text(), expected)) << diag.text();
  }
  EXPECT_EQ(init_with(h.program(), "two_arenas", 1 << 16, {64}, &diag), Error::OutOfMemory);
  EXPECT_TRUE(contains(diag.text(), "needs 2 planned arenas but 1 were given")) << diag.text();
  EXPECT_EQ(init_with(h.program(), "two_arenas", 1 << 16, arenas, &diag, nullptr, /*null_arena_data=*/true),
            Error::OutOfMemory);
  // Extra or larger arenas are fine.
  EXPECT_EQ(init_with(h.program(), "two_arenas", 1 << 16, {1000, 1000, 1000}, &diag), Error::Ok) << diag.text();
}

// --- Execution details ---------------------------------------------------------------------------

TEST(MethodTest, TempAllocatorIsResetAfterEachInstruction) {
  ProgramBuilder pb;
  MethodBuilder& m = pb.method("f");
  int32_t x = m.input_tensor(ScalarType::Float32, {100});
  int32_t s1 = m.planned_tensor(ScalarType::Float32, {1});
  int32_t s2 = m.planned_tensor(ScalarType::Float32, {1});
  m.kernel("test::scratch_sum", "default", {x, s1});  // 400 bytes of scratch each
  m.kernel("test::scratch_sum", "default", {x, s2});
  m.set_inputs({static_cast<uint32_t>(x)}).set_outputs({static_cast<uint32_t>(s1), static_cast<uint32_t>(s2)});
  PteBytes pte = pb.build();
  std::vector<float> data(100);
  for (int i = 0; i < 100; ++i) data[i] = static_cast<float>(i);
  TensorHolder in(ScalarType::Float32, {100}, data.data());
  {
    Harness h;
    ASSERT_EQ(h.load(pte), Error::Ok);
    ASSERT_EQ(h.load_method("f", 1 << 16, /*temp_bytes=*/512), Error::Ok) << h.message();
    ASSERT_EQ(h.method().set_input(0, in.value), Error::Ok);
    for (int run = 0; run < 3; ++run) {
      ASSERT_EQ(h.method().execute(), Error::Ok) << h.method().last_error_message();
      EXPECT_EQ(h.method().output(0).as_tensor->data_as<float>()[0], 4950);
      EXPECT_EQ(h.method().output(1).as_tensor->data_as<float>()[0], 4950);
    }
  }
  {
    Harness h;
    ASSERT_EQ(h.load(pte), Error::Ok);
    ASSERT_EQ(h.load_method("f", 1 << 16, /*temp_bytes=*/0), Error::Ok) << h.message();
    ASSERT_EQ(h.method().set_input(0, in.value), Error::Ok);
    EXPECT_EQ(h.method().execute(), Error::OutOfMemory);
    EXPECT_TRUE(contains(h.method().last_error_message(), "test::scratch_sum: temp allocator too small"))
        << h.method().last_error_message();
  }
}

TEST(MethodTest, KernelFailureStopsExecution) {
  ProgramBuilder pb;
  MethodBuilder& m = pb.method("f");
  int32_t s = m.state_tensor(ScalarType::Int64, {1}, std::vector<int64_t>{0});
  int32_t one = m.int_value(1);
  m.kernel("test::add_scalar_int", "default", {s, one, s});
  m.kernel("test::fail", "default", {});
  m.kernel("test::add_scalar_int", "default", {s, one, s});  // never reached
  Harness h;
  ASSERT_EQ(h.load(pb.build()), Error::Ok);
  ASSERT_EQ(h.load_method("f"), Error::Ok) << h.message();
  EXPECT_EQ(h.method().execute(), Error::InvalidArgument);
  EXPECT_STREQ(h.method().last_error_message(), "test::fail: this kernel always fails");
  EXPECT_EQ(h.method().value(static_cast<size_t>(s)).as_tensor->data_as<int64_t>()[0], 1);
  EXPECT_EQ(h.method().execute(), Error::InvalidArgument);
  EXPECT_EQ(h.method().value(static_cast<size_t>(s)).as_tensor->data_as<int64_t>()[0], 2);
}

TEST(MethodTest, MovedFromMethodIsNotUsable) {
  testing::FakeBackendStats& stats = testing::fake_backend_stats();
  stats = testing::FakeBackendStats();
  ProgramBuilder pb;
  testing::delegate_method(pb, "d");
  Harness h;
  ASSERT_EQ(h.load(pb.build()), Error::Ok);
  ASSERT_EQ(h.load_method("d"), Error::Ok) << h.message();
  {
    Method moved(std::move(h.method()));
    EXPECT_EQ(h.method().execute(), Error::InvalidState);
    EXPECT_EQ(h.method().reset_state(), Error::InvalidState);
    float x[4] = {1, 2, 3, 4};
    TensorHolder in(ScalarType::Float32, {4}, x);
    EXPECT_EQ(h.method().set_input(0, in.value), Error::InvalidState);
    ASSERT_EQ(moved.set_input(0, in.value), Error::Ok);
    ASSERT_EQ(moved.execute(), Error::Ok) << moved.last_error_message();
    EXPECT_EQ(moved.output(0).as_tensor->data_as<float>()[3], 13);
  }
  EXPECT_EQ(stats.destroy_calls, 1);
}

TEST(MethodTest, MinimalVerificationRunsTrustedPrograms) {
  PteBytes pte = testing::kitchen_sink_program();
  Harness h;
  ASSERT_EQ(h.load(pte.data(), pte.size(), Program::Verification::Minimal), Error::Ok) << h.message();
  ASSERT_EQ(h.load_method("matmul"), Error::Ok) << h.message();
  float a[6] = {0, 0, 1, 0, 0, 0};
  TensorHolder in(ScalarType::Float32, {2, 3}, a);
  ASSERT_EQ(h.method().set_input(0, in.value), Error::Ok);
  ASSERT_EQ(h.method().execute(), Error::Ok);
  EXPECT_EQ(h.method().output(0).as_tensor->data_as<float>()[3], 11);  // w[2][3]
}

TEST(MethodTest, ValueTableHoldsEveryKind) {
  Harness h;
  ASSERT_EQ(h.load(testing::kitchen_sink_program()), Error::Ok) << h.message();
  ASSERT_EQ(h.load_method("values"), Error::Ok) << h.message();
  const Method& m = h.method();
  // Indices follow all_values_method(): x, channels_last, y, none, double, string, sym,
  // int list, double list, bool list, tensor list, optional tensor list, unplanned.
  ASSERT_EQ(m.num_values(), 13u);
  EXPECT_EQ(m.value(1).as_tensor->dim_order[0], 1);
  EXPECT_FALSE(m.value(1).as_tensor->is_contiguous());
  EXPECT_TRUE(m.value(3).is_none());
  EXPECT_EQ(m.value(4).as_double, 0.5);
  EXPECT_EQ(std::string(m.value(5).as_string.data, m.value(5).as_string.size), "mean");
  Span<const int64_t> il = m.value(7).as_int_list.get();
  ASSERT_EQ(il.size(), 3u);
  EXPECT_EQ(il[0], 1);
  EXPECT_EQ(il[1], 7);  // symbolic: the Int at index 6
  EXPECT_EQ(il[2], 3);
  ASSERT_EQ(m.value(8).as_double_list.size(), 2u);
  EXPECT_EQ(m.value(8).as_double_list[1], -2.5);
  ASSERT_EQ(m.value(9).as_bool_list.size(), 3u);
  EXPECT_FALSE(m.value(9).as_bool_list[1]);
  ASSERT_EQ(m.value(10).as_tensor_list.size(), 2u);
  EXPECT_EQ(m.value(10).as_tensor_list[1], m.value(2).as_tensor);
  ASSERT_EQ(m.value(11).as_tensor_list.size(), 3u);
  EXPECT_EQ(m.value(11).as_tensor_list[1], nullptr);
  EXPECT_EQ(m.value(11).tag, ValueTag::OptionalTensorList);
  EXPECT_EQ(m.value(12).as_tensor->data, nullptr);
  EXPECT_EQ(m.value(12).as_tensor->capacity_bytes, 0u);
  float x[4] = {1, 2, 3, 4};
  TensorHolder in(ScalarType::Float32, {2, 2}, x);
  ASSERT_EQ(h.method().set_input(0, in.value), Error::Ok);
  ASSERT_EQ(h.method().execute(), Error::Ok);  // includes a Free instruction
  EXPECT_EQ(h.method().output(0).as_tensor->data_as<float>()[3], 4);
}

}  // namespace
}  // namespace ember
