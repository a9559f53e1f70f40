// Full verification rejects every program whose instructions write where they may not: a
// constant (its bytes may be a read-only mapping of the file: writing it crashed the
// runtime on a T5 encoder the exporter once wrote), an input the method does not declare
// mutable (the caller's memory), or past the declared argument list.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "runtime/loader/buffer_data_loader.h"
#include "runtime/program/program.h"
#include "test/support/program_builder.h"

namespace ember {
namespace {

using testing::MethodBuilder;
using testing::ProgramBuilder;
using testing::PteBytes;

// Loads `pte` with full verification; returns the diagnostic ("" when it loads).
std::string load_error(const PteBytes& pte) {
  BufferDataLoader loader(pte.data(), pte.size());
  Diagnostic diag;
  Result<Program> program = Program::load(&loader, Program::Verification::Full, &diag);
  if (program.ok()) return "";
  EXPECT_EQ(program.error(), Error::InvalidProgram);
  return diag.text();
}

const std::vector<float> kOnes(6, 1.0f);

TEST(WriteTargetsTest, KernelOutputIntoConstantIsRejected) {
  for (bool declared : {false, true}) {
    SCOPED_TRACE(declared ? "outputs declared" : "legacy program");
    ProgramBuilder pb;
    MethodBuilder& m = pb.method("forward");
    uint32_t x = m.input_tensor(ScalarType::Float32, {2, 3});
    uint32_t c = m.constant_tensor(ScalarType::Float32, {2, 3}, kOnes);
    uint32_t one = m.int_value(1);
    uint32_t add = m.kernel("aten::add", "Tensor", {static_cast<int32_t>(x), static_cast<int32_t>(c),
                                                    static_cast<int32_t>(one), static_cast<int32_t>(c)});
    if (declared) m.set_num_outputs(add, 1);
    m.set_inputs({x}).set_outputs({c});
    EXPECT_NE(load_error(pb.build()).find("instruction 0 writes tensor 1, a constant"), std::string::npos);
  }
}

TEST(WriteTargetsTest, EveryDeclaredOutputIsChecked) {
  // Two outputs (e.g. max.dim's values and indices): the first one is the constant.
  ProgramBuilder pb;
  MethodBuilder& m = pb.method("forward");
  uint32_t x = m.input_tensor(ScalarType::Float32, {2, 3});
  uint32_t c = m.constant_tensor(ScalarType::Float32, {2, 3}, kOnes);
  uint32_t y = m.planned_tensor(ScalarType::Float32, {2, 3});
  uint32_t call = m.kernel("test::two_outputs", "default", {static_cast<int32_t>(x), static_cast<int32_t>(c),
                                                             static_cast<int32_t>(y)});
  m.set_num_outputs(call, 2).set_inputs({x}).set_outputs({y});
  EXPECT_NE(load_error(pb.build()).find("writes tensor 1, a constant"), std::string::npos);
}

TEST(WriteTargetsTest, TensorListOutputsAreChecked) {
  ProgramBuilder pb;
  MethodBuilder& m = pb.method("forward");
  uint32_t x = m.input_tensor(ScalarType::Float32, {2, 3});
  uint32_t y = m.planned_tensor(ScalarType::Float32, {2, 3});
  uint32_t c = m.constant_tensor(ScalarType::Float32, {2, 3}, kOnes);
  uint32_t list = m.tensor_list({static_cast<int32_t>(y), static_cast<int32_t>(c)});
  uint32_t call = m.kernel("test::list_out", "default", {static_cast<int32_t>(x), static_cast<int32_t>(list)});
  m.set_num_outputs(call, 1).set_inputs({x}).set_outputs({y});
  EXPECT_NE(load_error(pb.build()).find("a constant"), std::string::npos);
}

TEST(WriteTargetsTest, InputsAreWritableOnlyWhenDeclaredMutable) {
  for (bool mutable_input : {false, true}) {
    SCOPED_TRACE(mutable_input ? "declared mutable" : "read-only");
    ProgramBuilder pb;
    MethodBuilder& m = pb.method("forward");
    uint32_t x = m.input_tensor(ScalarType::Float32, {2, 3});
    uint32_t y = m.input_tensor(ScalarType::Float32, {2, 3});
    uint32_t f = m.bool_value(false);
    // aten::copy_(x, y): an in-place write into input x.
    uint32_t call = m.kernel("aten::copy", "default", {static_cast<int32_t>(x), static_cast<int32_t>(y),
                                                       static_cast<int32_t>(f), static_cast<int32_t>(x)});
    m.set_num_outputs(call, 1).set_inputs({x, y}).set_outputs({y});
    if (mutable_input) m.set_mutable_inputs({x});
    std::string error = load_error(pb.build());
    if (mutable_input) {
      EXPECT_EQ(error, "");
    } else {
      EXPECT_NE(error.find("writes tensor 0, an input the method does not declare mutable"), std::string::npos)
          << error;
    }
  }
}

TEST(WriteTargetsTest, MutableInputsMustBeTensorInputs) {
  ProgramBuilder pb;
  MethodBuilder& m = pb.method("forward");
  uint32_t x = m.input_tensor(ScalarType::Float32, {2, 3});
  uint32_t y = m.planned_tensor(ScalarType::Float32, {2, 3});
  m.kernel("test::copy", "default", {static_cast<int32_t>(x), static_cast<int32_t>(y)});
  m.set_inputs({x}).set_outputs({y}).set_mutable_inputs({y});
  EXPECT_NE(load_error(pb.build()).find("is not a tensor input"), std::string::npos);
}

TEST(WriteTargetsTest, DelegateOutputsAreChecked) {
  ProgramBuilder pb;
  MethodBuilder& m = pb.method("forward");
  uint32_t x = m.input_tensor(ScalarType::Float32, {2, 3});
  uint32_t c = m.constant_tensor(ScalarType::Float32, {2, 3}, kOnes);
  uint32_t d = m.delegate("FakeBackend", -1, {1, 2, 3});
  uint32_t call = m.delegate_call(d, {static_cast<int32_t>(x), static_cast<int32_t>(c)});
  m.set_num_outputs(call, 1).set_inputs({x}).set_outputs({c});
  EXPECT_NE(load_error(pb.build()).find("a constant"), std::string::npos);
}

TEST(WriteTargetsTest, MoveIntoConstantIsRejected) {
  ProgramBuilder pb;
  MethodBuilder& m = pb.method("forward");
  uint32_t x = m.input_tensor(ScalarType::Float32, {2, 3});
  uint32_t c = m.constant_tensor(ScalarType::Float32, {2, 3}, kOnes);
  m.move(x, c);
  m.set_inputs({x}).set_outputs({c});
  EXPECT_NE(load_error(pb.build()).find("writes tensor 1, a constant"), std::string::npos);
}

TEST(WriteTargetsTest, MoreOutputsThanArgumentsIsRejected) {
  ProgramBuilder pb;
  MethodBuilder& m = pb.method("forward");
  uint32_t x = m.input_tensor(ScalarType::Float32, {2, 3});
  uint32_t y = m.planned_tensor(ScalarType::Float32, {2, 3});
  uint32_t call = m.kernel("test::copy", "default", {static_cast<int32_t>(x), static_cast<int32_t>(y)});
  m.set_num_outputs(call, 3).set_inputs({x}).set_outputs({y});
  EXPECT_NE(load_error(pb.build()).find("declares 3 outputs but has 2 arguments"), std::string::npos);
}

TEST(WriteTargetsTest, WellFormedProgramLoads) {
  ProgramBuilder pb;
  MethodBuilder& m = pb.method("forward");
  uint32_t x = m.input_tensor(ScalarType::Float32, {2, 3});
  uint32_t y = m.planned_tensor(ScalarType::Float32, {2, 3});
  uint32_t call = m.kernel("test::copy", "default", {static_cast<int32_t>(x), static_cast<int32_t>(y)});
  m.set_num_outputs(call, 1).set_inputs({x}).set_outputs({y});
  EXPECT_EQ(load_error(pb.build()), "");
}

}  // namespace
}  // namespace ember
