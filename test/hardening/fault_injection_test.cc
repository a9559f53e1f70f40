// Fault injection: every read of a program or a data file failing, or coming back short, in
// turn; every allocation of the method allocator failing in turn (the allocator cut at each
// 8-byte step below what init needs, so each request is the one that fails once); the temp
// allocator likewise at execute; every buffer a Module takes from its ModuleMemory failing in
// turn; a Module over a memory budget. Each must give a clean error
// (no crash, no out-of-bounds access, no leak: run under --config=asan, whose LeakSanitizer
// checks the delegates' own allocations too), and the same objects must then work once the
// fault is gone, with the reference output.
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "delegates/xnnpack/exporter/xnnpack_partitioner.h"
#include "runtime/executor/method.h"
#include "runtime/loader/buffer_data_loader.h"
#include "runtime/program/program.h"
#include "test/hardening/model_fixture.h"
#include "test/support/faulty_module_memory.h"

namespace ember {
namespace {

using testing::AlignedBytes;

// Serves a file from memory; load number `fault_at` (0-based) fails or returns half the bytes
// asked for (in a heap copy of exactly that size, so a reader that trusts the request reads out
// of bounds under ASan).
class FaultyLoader : public DataLoader {
 public:
  enum class Fault { Fail, Short };
  FaultyLoader(const AlignedBytes& bytes, size_t fault_at, Fault fault)
      : data_(static_cast<const uint8_t*>(bytes.data())), size_(bytes.size()), fault_at_(fault_at), fault_(fault) {}
  Result<FreeableBuffer> load(size_t offset, size_t size) override {
    const size_t call = calls_++;
    if (offset > size_ || size > size_ - offset) return Error::InvalidArgument;
    if (call != fault_at_) return FreeableBuffer(data_ + offset, size, nullptr, nullptr);
    if (fault_ == Fault::Fail) return Error::AccessFailed;
    const size_t n = size / 2;
    void* copy = std::malloc(n == 0 ? 1 : n);
    if (n > 0) std::memcpy(copy, data_ + offset, n);
    return FreeableBuffer(copy, n, [](void*, const void* p, size_t) { std::free(const_cast<void*>(p)); }, nullptr);
  }
  Result<size_t> size() const override { return size_; }
  size_t calls() const { return calls_; }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t fault_at_;
  Fault fault_;
  size_t calls_ = 0;
};

// small_cnn exported with its weights in a data file (and XNNPACK when asked).
struct ExternalProgram {
  std::unique_ptr<AlignedBytes> pte, ptd;
};
ExternalProgram export_external(bool xnnpack) {
  ExternalProgram p;
  const std::string shared = testing::shared_dir();
  if (shared.empty()) return p;
  exporter::ExportOptions o;
  if (xnnpack) o.partitioners.push_back(std::make_shared<xnnpack::XnnpackPartitioner>());
  const char* tmp = std::getenv("TEST_TMPDIR");
  o.external_weights = std::string(tmp ? tmp : "/tmp") + "/fault_injection_never_written.ptd";
  auto r = exporter::export_pt2_file(shared + "/models/small_cnn/model.pt2", o);
  EXPECT_TRUE(r.ok()) << r.status();
  if (!r.ok()) return p;
  p.pte.reset(new AlignedBytes(r->pte));
  p.ptd.reset(new AlignedBytes(r->ptd));
  return p;
}

// Exactly sized heap memory for one method: arenas, method and temp allocators.
struct Memory {
  Memory(const MethodMeta& meta, size_t method_bytes, size_t temp_bytes) {
    for (size_t i = 0; i < meta.num_arenas(); ++i) {
      arenas.emplace_back(*meta.arena_size(i) + 64);
      spans.emplace_back(aligned(arenas.back()), *meta.arena_size(i));
    }
    method_mem.resize(method_bytes + 64);
    temp_mem.resize(temp_bytes + 64);
    method_alloc = MemoryAllocator(aligned(method_mem), method_bytes);
    temp_alloc = MemoryAllocator(aligned(temp_mem), temp_bytes);
    mm.method_allocator = &method_alloc;
    mm.temp_allocator = &temp_alloc;
    mm.planned_arenas = Span<Span<uint8_t>>(spans.data(), spans.size());
  }
  static uint8_t* aligned(std::vector<uint8_t>& v) {
    return v.data() + (64 - reinterpret_cast<uintptr_t>(v.data()) % 64) % 64;
  }
  std::vector<std::vector<uint8_t>> arenas;
  std::vector<Span<uint8_t>> spans;
  std::vector<uint8_t> method_mem, temp_mem;
  MemoryAllocator method_alloc, temp_alloc;
  MemoryManager mm;
};

// Runs `method` on the model's reference input; true when the output matches the reference.
bool matches_reference(Method& method, const testing::ExportedModel& model) {
  if (method.bind_input(0, model.input.tensor()) != Error::Ok || method.execute() != Error::Ok) return false;
  const Tensor& got = *method.output(0).as_tensor;
  const Tensor& want = model.reference.tensor();
  if (got.numel() != want.numel()) return false;
  for (int64_t i = 0; i < got.numel(); ++i) {
    if (std::fabs(static_cast<const float*>(got.data)[i] - static_cast<const float*>(want.data)[i]) > 1e-4f) return false;
  }
  return true;
}

// Every read of the program failing / short in turn: a clean error each time, then success.
TEST(FaultInjection, EveryProgramReadFailsOrComesBackShort) {
  const testing::ExportedModel& model = testing::exported_model("small_cnn");
  EMBER_SKIP_OR_FAIL_IF_NO_MODEL(model);
  AlignedBytes bytes(model.pte);
  for (auto fault : {FaultyLoader::Fault::Fail, FaultyLoader::Fault::Short}) {
    size_t faults = 0;
    for (size_t n = 0;; ++n) {
      FaultyLoader loader(bytes, n, fault);
      Diagnostic diag;
      Result<Program> p = Program::load(&loader, Program::Verification::Full, &diag);
      if (loader.calls() <= n) {  // the fault was never reached: every read done
        ASSERT_TRUE(p.ok()) << diag.message;
        break;
      }
      ++faults;
      EXPECT_FALSE(p.ok()) << "read " << n << " faulted but the load succeeded";
      EXPECT_NE(diag.message[0], 0) << "read " << n << ": no message";
      ASSERT_LT(n, 100u);
    }
    EXPECT_GE(faults, 3u) << "header, FlatBuffer and segments are separate reads";
  }
}

// The same for a program with external weights and its data file, each file's reads in turn.
TEST(FaultInjection, EveryDataFileReadFailsOrComesBackShort) {
  ExternalProgram ext = export_external(false);
  if (!ext.pte) GTEST_SKIP() << "shared/ data not found";
  for (auto fault : {FaultyLoader::Fault::Fail, FaultyLoader::Fault::Short}) {
    for (size_t n = 0;; ++n) {
      FaultyLoader loader(*ext.ptd, n, fault);
      Diagnostic diag;
      Result<DataFile> d = DataFile::load(&loader, DataFile::Verification::Full, &diag);
      if (loader.calls() <= n) {
        ASSERT_TRUE(d.ok()) << diag.message;
        break;
      }
      EXPECT_FALSE(d.ok()) << "read " << n;
      EXPECT_NE(diag.message[0], 0) << "read " << n;
      ASSERT_LT(n, 100u);
    }
  }
  BufferDataLoader data_loader(ext.ptd->data(), ext.ptd->size());
  Result<DataFile> data = DataFile::load(&data_loader);
  ASSERT_TRUE(data.ok());
  const DataFile* files[1] = {&*data};
  for (size_t n = 0;; ++n) {
    FaultyLoader loader(*ext.pte, n, FaultyLoader::Fault::Short);
    Diagnostic diag;
    Result<Program> p = Program::load(&loader, Program::Verification::Full, &diag, {Span<const DataFile* const>(files, 1)});
    if (loader.calls() <= n) {
      ASSERT_TRUE(p.ok()) << diag.message;
      break;
    }
    EXPECT_FALSE(p.ok()) << "read " << n;
  }
}

// Every allocation of a method's init failing in turn (portable kernels, and XNNPACK whose
// delegate init must release what it built before the failure), then init with enough memory
// runs correctly.
class MethodAllocatorFaults : public ::testing::TestWithParam<bool> {};

TEST_P(MethodAllocatorFaults, EveryAllocationFailsInTurn) {
  const bool xnnpack = GetParam();
  ExternalProgram ext = export_external(xnnpack);
  if (!ext.pte) GTEST_SKIP() << "shared/ data not found";
  const testing::ExportedModel& model = testing::exported_model("small_cnn");
  EMBER_SKIP_OR_FAIL_IF_NO_MODEL(model);
  BufferDataLoader data_loader(ext.ptd->data(), ext.ptd->size());
  Result<DataFile> data = DataFile::load(&data_loader);
  ASSERT_TRUE(data.ok());
  const DataFile* files[1] = {&*data};
  BufferDataLoader loader(ext.pte->data(), ext.pte->size());
  Result<Program> program = Program::load(&loader, Program::Verification::Full, nullptr,
                                          {Span<const DataFile* const>(files, 1)});
  ASSERT_TRUE(program.ok());
  const MethodMeta meta = *program->method_meta("forward");
  size_t needed = 0;
  {
    Memory memory(meta, 1 << 20, 64 << 10);
    Result<Method> m = program->load_method("forward", &memory.mm);
    ASSERT_TRUE(m.ok());
    needed = memory.method_alloc.high_water();
    EXPECT_TRUE(matches_reference(*m, model));
  }
  ASSERT_GT(needed, 0u);
  size_t failures = 0;
  for (size_t cap = 0; cap < needed; cap += 8) {
    Memory memory(meta, cap, 64 << 10);
    Diagnostic diag;
    Result<Method> m = program->load_method("forward", &memory.mm, &diag);
    ASSERT_FALSE(m.ok()) << cap << " of " << needed << " bytes";
    EXPECT_EQ(m.error(), Error::OutOfMemory) << cap << ": " << diag.message;
    EXPECT_NE(std::string(diag.message).find("at least"), std::string::npos) << diag.message;
    ++failures;
  }
  EXPECT_EQ(failures, (needed + 7) / 8);
  Memory exact(meta, needed, 64 << 10);
  Result<Method> m = program->load_method("forward", &exact.mm);
  ASSERT_TRUE(m.ok());
  EXPECT_TRUE(matches_reference(*m, model));
}

INSTANTIATE_TEST_SUITE_P(Backends, MethodAllocatorFaults, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& info) { return info.param ? "xnnpack" : "portable"; });

// keyword_lstm's kernels take scratch at execute: a temp allocator cut at each step below what
// they need fails that execute cleanly, and the same method then runs correctly once the
// allocator has enough.
TEST(FaultInjection, EveryTempAllocationFailsInTurnAndTheMethodRecovers) {
  const testing::ExportedModel& model = testing::exported_model("keyword_lstm");
  EMBER_SKIP_OR_FAIL_IF_NO_MODEL(model);
  AlignedBytes bytes(model.pte);
  BufferDataLoader loader(bytes.data(), bytes.size());
  Result<Program> program = Program::load(&loader);
  ASSERT_TRUE(program.ok());
  const MethodMeta meta = *program->method_meta("forward");
  size_t needed = 0;
  {
    Memory memory(meta, 1 << 20, 1 << 20);
    Result<Method> m = program->load_method("forward", &memory.mm);
    ASSERT_TRUE(m.ok());
    ASSERT_TRUE(matches_reference(*m, model));
    needed = memory.temp_alloc.high_water();
  }
  ASSERT_GT(needed, 0u) << "keyword_lstm is expected to use scratch";
  Memory memory(meta, 1 << 20, needed);
  Result<Method> m = program->load_method("forward", &memory.mm);
  ASSERT_TRUE(m.ok());
  // Kernels may take less scratch when less is there (a smaller block): each cap either fails
  // cleanly or computes the right answer, and the failures are exactly the caps below a
  // minimum.
  const size_t step = std::max<size_t>(8, needed / 256 / 8 * 8);
  size_t failed = 0, smallest_ok = needed;
  for (size_t cap = 0; cap < needed; cap += step) {
    memory.temp_alloc = MemoryAllocator(Memory::aligned(memory.temp_mem), cap);
    ASSERT_EQ(m->bind_input(0, model.input.tensor()), Error::Ok);
    const Error e = m->execute();
    if (e == Error::Ok) {
      smallest_ok = std::min(smallest_ok, cap);
      memory.temp_alloc = MemoryAllocator(Memory::aligned(memory.temp_mem), cap);
      EXPECT_TRUE(matches_reference(*m, model)) << cap << " of " << needed;
      continue;
    }
    ++failed;
    EXPECT_EQ(e, Error::OutOfMemory) << cap << " of " << needed;
    EXPECT_LT(cap, smallest_ok) << "a larger allocator failed after a smaller one worked";
    EXPECT_NE(std::string(m->last_error_message()).find("at least"), std::string::npos) << m->last_error_message();
  }
  EXPECT_GT(failed, 0u);
  memory.temp_alloc = MemoryAllocator(Memory::aligned(memory.temp_mem), needed);
  EXPECT_TRUE(matches_reference(*m, model));
}

// A Module with a memory budget refuses a method whose planned memory exceeds it, with the
// numbers, and loads it once the budget allows.
// Every buffer a Module takes (arenas, temp and method allocators, through ModuleOptions::memory)
// fails in turn: the call reports OutOfMemory with the bytes, the same Module then runs right
// once memory is back, and every block is given back when it goes (live() == 0; LeakSanitizer
// under --config=asan checks the rest). Portable kernels and XNNPACK.
class ModuleMemoryFaults : public ::testing::TestWithParam<bool> {};

TEST_P(ModuleMemoryFaults, EveryModuleAllocationFailsInTurnAndTheModuleRecovers) {
  const testing::ExportedModel& model = testing::exported_model("small_cnn");
  EMBER_SKIP_OR_FAIL_IF_NO_MODEL(model);
  std::vector<uint8_t> pte = model.pte;
  if (GetParam()) {
    exporter::ExportOptions o;
    o.partitioners.push_back(std::make_shared<xnnpack::XnnpackPartitioner>());
    auto r = exporter::export_pt2_file(testing::shared_dir() + "/models/small_cnn/model.pt2", o);
    ASSERT_TRUE(r.ok()) << r.status();
    pte = r->pte;
  }
  AlignedBytes bytes(pte);
  std::vector<float> reference;
  {
    Module m(bytes.data(), bytes.size());
    auto out = m.forward({model.input});
    ASSERT_TRUE(out.ok()) << out.error().to_string();
    reference.assign(out->at(0).data<float>(), out->at(0).data<float>() + out->at(0).numel());
  }
  size_t faults = 0;
  for (size_t k = 0;; ++k) {
    testing::FaultyModuleMemory memory(k);
    {
      ModuleOptions options;
      options.memory = &memory;
      options.temp_allocator_bytes = 1 << 20;
      Module m(bytes.data(), bytes.size(), options);
      auto out = m.forward({model.input});
      if (memory.calls() <= k) {  // allocation k never came: every one has failed once
        ASSERT_TRUE(out.ok()) << out.error().to_string();
        break;
      }
      faults++;
      ASSERT_FALSE(out.ok()) << "allocation " << k << " failed but the call succeeded";
      EXPECT_EQ(out.error().code(), Error::OutOfMemory) << out.error().to_string();
      EXPECT_NE(out.error().message().find("bytes"), std::string::npos) << out.error().to_string();
      EXPECT_NE(out.error().message().find("no room"), std::string::npos) << out.error().to_string();
      memory.fail_at(SIZE_MAX);
      auto again = m.forward({model.input});
      ASSERT_TRUE(again.ok()) << "allocation " << k << ": " << again.error().to_string();
      EXPECT_EQ(std::vector<float>(again->at(0).data<float>(), again->at(0).data<float>() + again->at(0).numel()),
                reference)
          << "allocation " << k;
    }
    EXPECT_EQ(memory.live(), 0u) << "allocation " << k << ": blocks not given back";
    ASSERT_LT(k, 64u) << "a Module should take a handful of buffers";
  }
  EXPECT_GE(faults, 3u) << "arena, temp allocator and method allocator at least";
  RecordProperty("faults", static_cast<int>(faults));
}

INSTANTIATE_TEST_SUITE_P(Backends, ModuleMemoryFaults, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return std::string(info.param ? "xnnpack" : "portable");
                         });

TEST(FaultInjection, ModuleMemoryBudgetIsEnforcedWithTheNumbers) {
  const testing::ExportedModel& model = testing::exported_model("small_cnn");
  EMBER_SKIP_OR_FAIL_IF_NO_MODEL(model);
  AlignedBytes bytes(model.pte);
  ModuleOptions options;
  options.temp_allocator_bytes = 4096;
  options.memory_budget_bytes = 1024;
  Module tight(bytes.data(), bytes.size(), options);
  Status s = tight.load_method("forward");
  EXPECT_EQ(s.code(), Error::OutOfMemory);
  EXPECT_NE(s.message().find("budget of 1024 bytes"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("memory_budget_bytes"), std::string::npos) << s.message();
  options.memory_budget_bytes = 64 << 20;
  Module roomy(bytes.data(), bytes.size(), options);
  auto out = roomy.forward({model.input});
  ASSERT_TRUE(out.ok()) << out.error().to_string();
}

}  // namespace
}  // namespace ember
