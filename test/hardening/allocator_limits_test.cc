// Memory given to a Method too small, one allocator at a time (method allocator, each
// planned arena, temp): a clear OutOfMemory error that states the bytes needed, and exactly
// that many bytes then work. Uses Program/Method directly on real exported models.
#include <cstdlib>
#include <memory>
#include <regex>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "runtime/executor/method.h"
#include "runtime/loader/buffer_data_loader.h"
#include "runtime/program/program.h"
#include "test/hardening/model_fixture.h"

namespace ember {
namespace {

using testing::AlignedBytes;
using testing::exported_model;

// Exactly sized, 64-byte aligned heap buffer (ASan sees overruns).
struct Buffer {
  explicit Buffer(size_t n) : size(n), data(static_cast<uint8_t*>(std::aligned_alloc(64, (n + 63) / 64 * 64 + 64))) {}
  ~Buffer() { std::free(data); }
  size_t size;
  uint8_t* data;
};

// Memory for one load_method() call; each size can be overridden.
struct Memory {
  Memory(const MethodMeta& meta, size_t method_bytes, size_t temp_bytes, std::vector<size_t> arena_bytes = {}) {
    for (size_t i = 0; i < meta.num_arenas(); ++i) {
      size_t n = i < arena_bytes.size() ? arena_bytes[i] : *meta.arena_size(i);
      arenas.emplace_back(new Buffer(n));
      spans.emplace_back(arenas.back()->data, n);
    }
    method_mem.reset(new Buffer(method_bytes));
    temp_mem.reset(new Buffer(temp_bytes));
    method_alloc = MemoryAllocator(method_mem->data, method_bytes);
    temp_alloc = MemoryAllocator(temp_mem->data, temp_bytes);
    mm.method_allocator = &method_alloc;
    mm.temp_allocator = &temp_alloc;
    mm.planned_arenas = Span<Span<uint8_t>>(spans.data(), spans.size());
  }
  std::vector<std::unique_ptr<Buffer>> arenas;
  std::vector<Span<uint8_t>> spans;
  std::unique_ptr<Buffer> method_mem, temp_mem;
  MemoryAllocator method_alloc, temp_alloc;
  MemoryManager mm;
};

// The number after "at least " in a message; 0 when absent.
size_t at_least(const std::string& message) {
  std::smatch m;
  if (!std::regex_search(message, m, std::regex("at least ([0-9]+)"))) return 0;
  return static_cast<size_t>(std::stoull(m[1].str()));
}

class AllocatorLimits : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    const testing::ExportedModel& m = exported_model(GetParam());
    model_ = &m;
    if (m.pte.empty()) return;
    bytes_.reset(new AlignedBytes(m.pte));
    loader_.reset(new BufferDataLoader(bytes_->data(), bytes_->size()));
    Diagnostic diag;
    Result<Program> p = Program::load(loader_.get(), Program::Verification::Full, &diag);
    ASSERT_TRUE(p.ok()) << diag.message;
    program_.reset(new Program(std::move(*p)));
  }
  MethodMeta meta() const { return *program_->method_meta("forward"); }

  // Loads, feeds the reference input and executes; returns the error and its message.
  Error run(Memory& memory, std::string* message) {
    Diagnostic diag;
    Result<Method> method = program_->load_method("forward", &memory.mm, &diag);
    if (!method.ok()) {
      *message = diag.message;
      return method.error();
    }
    Error err = method->bind_input(0, model_->input.tensor());
    if (err == Error::Ok) err = method->execute();
    *message = method->last_error_message();
    return err;
  }

  const testing::ExportedModel* model_ = nullptr;
  std::unique_ptr<AlignedBytes> bytes_;
  std::unique_ptr<BufferDataLoader> loader_;
  std::unique_ptr<Program> program_;
};

constexpr size_t kBig = 64u << 20;

TEST_P(AllocatorLimits, MethodAllocatorTooSmallStatesTheBytesNeeded) {
  EMBER_SKIP_OR_FAIL_IF_NO_MODEL(*model_);
  std::string message;
  // What the method really uses.
  Memory roomy(meta(), kBig, kBig);
  ASSERT_EQ(run(roomy, &message), Error::Ok) << message;
  const size_t used = roomy.method_alloc.high_water();
  ASSERT_GT(used, 0u);
  for (size_t given : {size_t{0}, size_t{64}, used / 2, used - 1}) {
    SCOPED_TRACE(given);
    Memory tight(meta(), given, kBig);
    ASSERT_EQ(run(tight, &message), Error::OutOfMemory) << message;
    EXPECT_NE(message.find("method allocator too small"), std::string::npos) << message;
    EXPECT_NE(message.find(std::to_string(given) + " bytes given"), std::string::npos) << message;
    size_t needed = at_least(message);
    EXPECT_GT(needed, given) << message;
    EXPECT_LE(needed, used) << message;  // a lower bound: never more than really needed
  }
  // The final lower bound is exact: one byte short reports `used`, and `used` works.
  Memory short_by_one(meta(), used - 1, kBig);
  ASSERT_EQ(run(short_by_one, &message), Error::OutOfMemory);
  EXPECT_EQ(at_least(message), used) << message;
  Memory exact(meta(), used, kBig);
  EXPECT_EQ(run(exact, &message), Error::Ok) << message;
}

TEST_P(AllocatorLimits, EachPlannedArenaTooSmallStatesTheBytesNeeded) {
  EMBER_SKIP_OR_FAIL_IF_NO_MODEL(*model_);
  MethodMeta m = meta();
  ASSERT_GT(m.num_arenas(), 0u);
  for (size_t i = 0; i < m.num_arenas(); ++i) {
    const size_t need = *m.arena_size(i);
    if (need == 0) continue;
    SCOPED_TRACE(i);
    std::vector<size_t> sizes;
    for (size_t k = 0; k < m.num_arenas(); ++k) sizes.push_back(*m.arena_size(k));
    sizes[i] = need - 1;
    Memory tight(m, kBig, kBig, sizes);
    std::string message;
    ASSERT_EQ(run(tight, &message), Error::OutOfMemory) << message;
    std::string expected = "planned arena " + std::to_string(i) + " of method 'forward' needs " +
                           std::to_string(need) + " bytes but " + std::to_string(need - 1) + " were given";
    EXPECT_NE(message.find(expected), std::string::npos) << message << "\nexpected: " << expected;
  }
  // Fewer arenas than the plan has.
  Memory none(m, kBig, kBig);
  none.mm.planned_arenas = Span<Span<uint8_t>>();
  std::string message;
  ASSERT_EQ(run(none, &message), Error::OutOfMemory) << message;
  EXPECT_NE(message.find("needs " + std::to_string(m.num_arenas()) + " planned arenas but 0 were given"),
            std::string::npos)
      << message;
  // A misaligned arena is refused (kernels read elements as their type).
  if (*m.arena_size(0) > 0) {
    std::vector<size_t> sizes;
    for (size_t k = 0; k < m.num_arenas(); ++k) sizes.push_back(*m.arena_size(k) + 8);
    Memory shifted(m, kBig, kBig, sizes);
    shifted.spans[0] = Span<uint8_t>(shifted.arenas[0]->data + 1, *m.arena_size(0));
    ASSERT_EQ(run(shifted, &message), Error::InvalidArgument) << message;
    EXPECT_NE(message.find("8-byte aligned"), std::string::npos) << message;
  }
}

INSTANTIATE_TEST_SUITE_P(Models, AllocatorLimits, ::testing::Values("small_cnn", "dynamic_mlp", "keyword_lstm"));

// keyword_lstm's LSTM kernel needs scratch: a temp allocator that is too small (or none)
// fails at execute with the bytes needed; that many bytes then work.
TEST(TempAllocatorLimits, TooSmallStatesTheBytesNeeded) {
  const testing::ExportedModel& model = exported_model("keyword_lstm");
  EMBER_SKIP_OR_FAIL_IF_NO_MODEL(model);
  AlignedBytes bytes(model.pte);
  BufferDataLoader loader(bytes.data(), bytes.size());
  Result<Program> program = Program::load(&loader);
  ASSERT_TRUE(program.ok());
  MethodMeta meta = *program->method_meta("forward");
  auto run = [&](Memory& memory, std::string* message) {
    Diagnostic diag;
    Result<Method> method = program->load_method("forward", &memory.mm, &diag);
    if (!method.ok()) {
      *message = diag.message;
      return method.error();
    }
    Error err = method->bind_input(0, model.input.tensor());
    if (err == Error::Ok) err = method->execute();
    *message = method->last_error_message();
    return err;
  };
  std::string message;
  Memory tiny(meta, kBig, 256);
  ASSERT_EQ(run(tiny, &message), Error::OutOfMemory) << message;
  EXPECT_NE(message.find("aten::lstm"), std::string::npos) << message;
  EXPECT_NE(message.find("temp allocator: 256 bytes given, at least "), std::string::npos) << message;
  const size_t needed = at_least(message);
  ASSERT_GT(needed, 256u) << message;
  // Enough for the first kernel that failed; later ones may need more: grow until it runs,
  // each failure again stating its need.
  size_t given = needed;
  for (int attempt = 0; attempt < 8; ++attempt) {
    Memory enough(meta, kBig, given);
    Error err = run(enough, &message);
    if (err == Error::Ok) break;
    ASSERT_EQ(err, Error::OutOfMemory) << message;
    ASSERT_GT(at_least(message), given) << message;
    given = at_least(message);
  }
  Memory enough(meta, kBig, given);
  EXPECT_EQ(run(enough, &message), Error::Ok) << message;
  // No temp allocator at all.
  Memory none(meta, kBig, 0);
  none.mm.temp_allocator = nullptr;
  ASSERT_EQ(run(none, &message), Error::OutOfMemory) << message;
  EXPECT_NE(message.find("no temp allocator"), std::string::npos) << message;
}

}  // namespace
}  // namespace ember
