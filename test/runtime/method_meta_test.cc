// MethodMeta and Program queries, without initialising any method.
#include <memory>
#include <string>

#include <gtest/gtest.h>

#include "runtime/executor/method.h"
#include "runtime/loader/buffer_data_loader.h"
#include "runtime/program/program.h"
#include "test/support/program_builder.h"

namespace ember {
namespace {

using testing::MethodBuilder;
using testing::ProgramBuilder;
using testing::PteBytes;

class MethodMetaTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ProgramBuilder pb;
    MethodBuilder& m = pb.method("forward");
    uint32_t x = m.input_tensor(ScalarType::Float32, {8, 3}, /*dynamic=*/true);          // arena 0
    uint32_t ids = m.input_tensor(ScalarType::Int64, {5}, false, /*arena=*/1);            // arena 1
    uint32_t n = m.int_value(4);
    uint32_t y = m.planned_tensor(ScalarType::Float16, {2, 3, 4}, false, /*arena=*/1);
    uint32_t flag = m.bool_value(true);
    m.kernel("test::copy", "default", {static_cast<int32_t>(x), static_cast<int32_t>(x)});
    m.kernel("test::copy", "default", {static_cast<int32_t>(ids), static_cast<int32_t>(ids)});
    m.set_inputs({x, ids, n}).set_outputs({y, flag});
    pb.method("empty");
    pte_ = pb.build();
    loader_.reset(new BufferDataLoader(pte_.data(), pte_.size()));
    Result<Program> p = Program::load(loader_.get(), Program::Verification::Full, &diag_);
    ASSERT_TRUE(p.ok()) << diag_.text();
    program_.reset(new Program(std::move(*p)));
  }
  PteBytes pte_;
  std::unique_ptr<BufferDataLoader> loader_;
  std::unique_ptr<Program> program_;
  Diagnostic diag_;
};

TEST_F(MethodMetaTest, MethodNames) {
  ASSERT_EQ(program_->num_methods(), 2u);
  EXPECT_STREQ(*program_->method_name(0), "forward");
  EXPECT_STREQ(*program_->method_name(1), "empty");
  EXPECT_EQ(program_->method_name(2).error(), Error::NotFound);
  EXPECT_EQ(program_->method_meta("nope").error(), Error::NotFound);
  EXPECT_EQ(program_->method_meta(nullptr).error(), Error::NotFound);
  EXPECT_EQ(program_->flatbuffer() != nullptr, true);
}

TEST_F(MethodMetaTest, InputsOutputsAndBounds) {
  Result<MethodMeta> meta = program_->method_meta("forward");
  ASSERT_TRUE(meta.ok());
  EXPECT_STREQ(meta->name(), "forward");
  ASSERT_EQ(meta->num_inputs(), 3u);
  ASSERT_EQ(meta->num_outputs(), 2u);
  EXPECT_EQ(meta->input_tag(0), ValueTag::Tensor);
  EXPECT_EQ(meta->input_tag(1), ValueTag::Tensor);
  EXPECT_EQ(meta->input_tag(2), ValueTag::Int);
  EXPECT_EQ(meta->input_tag(3), ValueTag::None);  // out of range
  EXPECT_EQ(meta->output_tag(0), ValueTag::Tensor);
  EXPECT_EQ(meta->output_tag(1), ValueTag::Bool);

  Result<TensorInfo> x = meta->input_tensor_info(0);
  ASSERT_TRUE(x.ok());
  EXPECT_EQ(x->dtype, ScalarType::Float32);
  EXPECT_TRUE(x->dynamic);
  ASSERT_EQ(x->max_sizes.size(), 2u);
  EXPECT_EQ(x->max_sizes[0], 8);
  EXPECT_EQ(x->max_sizes[1], 3);
  EXPECT_EQ(x->nbytes, 8u * 3u * 4u);

  Result<TensorInfo> ids = meta->input_tensor_info(1);
  ASSERT_TRUE(ids.ok());
  EXPECT_EQ(ids->dtype, ScalarType::Int64);
  EXPECT_FALSE(ids->dynamic);
  ASSERT_EQ(ids->max_sizes.size(), 1u);
  EXPECT_EQ(ids->max_sizes[0], 5);
  EXPECT_EQ(ids->nbytes, 40u);

  EXPECT_EQ(meta->input_tensor_info(2).error(), Error::InvalidArgument);  // an Int
  EXPECT_EQ(meta->input_tensor_info(9).error(), Error::InvalidArgument);

  Result<TensorInfo> y = meta->output_tensor_info(0);
  ASSERT_TRUE(y.ok());
  EXPECT_EQ(y->dtype, ScalarType::Float16);
  ASSERT_EQ(y->max_sizes.size(), 3u);
  EXPECT_EQ(y->max_sizes[2], 4);
  EXPECT_EQ(y->nbytes, 48u);
  EXPECT_EQ(meta->output_tensor_info(1).error(), Error::InvalidArgument);
}

TEST_F(MethodMetaTest, ArenasAndCounts) {
  Result<MethodMeta> meta = program_->method_meta("forward");
  ASSERT_TRUE(meta.ok());
  ASSERT_EQ(meta->num_arenas(), 2u);
  EXPECT_EQ(*meta->arena_size(0), 128u);  // 96 bytes rounded to 64
  EXPECT_EQ(*meta->arena_size(1), 128u);  // 40 bytes at 0, 48 bytes at 64 -> 112 -> 128
  EXPECT_EQ(meta->arena_size(2).error(), Error::NotFound);
  EXPECT_EQ(meta->num_instructions(), 2u);
  EXPECT_EQ(meta->num_delegates(), 0u);

  Result<MethodMeta> empty = program_->method_meta("empty");
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(empty->num_inputs(), 0u);
  EXPECT_EQ(empty->num_outputs(), 0u);
  EXPECT_EQ(empty->num_arenas(), 0u);
  EXPECT_EQ(empty->num_instructions(), 0u);
  EXPECT_EQ(empty->input_tag(0), ValueTag::None);
}

TEST_F(MethodMetaTest, MetaNeedsNoKernelsOrMemory) {
  // "forward" uses test::copy, which this binary does not link: meta still works, and
  // loading the method reports the missing kernel.
  Result<MethodMeta> meta = program_->method_meta("forward");
  ASSERT_TRUE(meta.ok());
  EXPECT_EQ(meta->num_inputs(), 3u);
  alignas(64) uint8_t mem[8192];
  alignas(64) uint8_t arena0[128];
  alignas(64) uint8_t arena1[128];
  Span<uint8_t> arenas[2] = {Span<uint8_t>(arena0, 128), Span<uint8_t>(arena1, 128)};
  MemoryAllocator alloc(mem, sizeof(mem));
  MemoryManager mm;
  mm.method_allocator = &alloc;
  mm.planned_arenas = Span<Span<uint8_t>>(arenas, 2);
  Diagnostic diag;
  Result<Method> m = program_->load_method("forward", &mm, &diag);
  EXPECT_EQ(m.error(), Error::NotSupported);
  EXPECT_NE(std::string(diag.text()).find("test::copy.default"), std::string::npos) << diag.text();
}

}  // namespace
}  // namespace ember
