// Buffer, file and mmap loaders, and loading + running a program through each.
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "runtime/loader/buffer_data_loader.h"
#include "runtime/loader/file_data_loader.h"
#include "runtime/loader/mmap_data_loader.h"
#include "runtime/program/program.h"
#include "test/support/program_builder.h"
#include "test/support/test_programs.h"

namespace ember {
namespace {

using testing::PteBytes;

std::string temp_dir() {
  const char* dir = std::getenv("TEST_TMPDIR");
  return dir != nullptr ? dir : "/tmp";
}

std::string write_file(const std::string& name, const void* data, size_t size) {
  std::string path = temp_dir() + "/" + name;
  FILE* f = std::fopen(path.c_str(), "wb");
  EXPECT_NE(f, nullptr);
  if (size > 0) {
    EXPECT_EQ(std::fwrite(data, 1, size, f), size);
  }
  std::fclose(f);
  return path;
}

std::vector<uint8_t> pattern(size_t n) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(i * 7 + 3);
  return v;
}

// Checks the DataLoader contract on `loader`, whose content is `expected`.
void check_loader(DataLoader& loader, const std::vector<uint8_t>& expected) {
  ASSERT_TRUE(loader.size().ok());
  EXPECT_EQ(*loader.size(), expected.size());
  for (size_t offset : {size_t{0}, size_t{1}, size_t{64}, size_t{1000}}) {
    Result<FreeableBuffer> b = loader.load(offset, 100);
    ASSERT_TRUE(b.ok()) << offset;
    EXPECT_EQ(b->size(), 100u);
    EXPECT_EQ(std::memcmp(b->data(), expected.data() + offset, 100), 0) << offset;
  }
  Result<FreeableBuffer> whole = loader.load(0, expected.size());
  ASSERT_TRUE(whole.ok());
  EXPECT_EQ(std::memcmp(whole->data(), expected.data(), expected.size()), 0);
  Result<FreeableBuffer> empty_at_end = loader.load(expected.size(), 0);
  EXPECT_TRUE(empty_at_end.ok());
  EXPECT_EQ(loader.load(expected.size() - 10, 11).error(), Error::InvalidProgram);
  EXPECT_EQ(loader.load(expected.size() + 1, 0).error(), Error::InvalidProgram);
  EXPECT_EQ(loader.load(SIZE_MAX, 2).error(), Error::InvalidProgram);
  EXPECT_EQ(loader.load(2, SIZE_MAX).error(), Error::InvalidProgram);
}

TEST(BufferDataLoaderTest, ZeroCopyRanges) {
  std::vector<uint8_t> data = pattern(4096);
  BufferDataLoader loader(data.data(), data.size());
  check_loader(loader, data);
  Result<FreeableBuffer> b = loader.load(128, 16);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->data(), data.data() + 128);  // in place
}

TEST(FileDataLoaderTest, ReadsRangesIntoAlignedMemory) {
  std::vector<uint8_t> data = pattern(4096);
  std::string path = write_file("file_loader.bin", data.data(), data.size());
  Result<FileDataLoader> loader = FileDataLoader::open(path.c_str());
  ASSERT_TRUE(loader.ok());
  check_loader(*loader, data);
  Result<FreeableBuffer> b = loader->load(3, 5);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(reinterpret_cast<uintptr_t>(b->data()) % 64, 0u);
  // Buffers outlive the loader.
  FreeableBuffer kept = std::move(*b);
  { Result<FileDataLoader> moved(std::move(loader)); }
  EXPECT_EQ(std::memcmp(kept.data(), data.data() + 3, 5), 0);
  kept.free();
  EXPECT_EQ(kept.data(), nullptr);
  EXPECT_EQ(kept.size(), 0u);
}

TEST(FileDataLoaderTest, OpenErrors) {
  EXPECT_EQ(FileDataLoader::open(nullptr).error(), Error::InvalidArgument);
  EXPECT_EQ(FileDataLoader::open((temp_dir() + "/does/not/exist.pte").c_str()).error(), Error::AccessFailed);
  EXPECT_EQ(FileDataLoader::open(temp_dir().c_str()).error(), Error::AccessFailed);  // a directory
}

TEST(MmapDataLoaderTest, MapsInPlace) {
  std::vector<uint8_t> data = pattern(8192);
  std::string path = write_file("mmap_loader.bin", data.data(), data.size());
  Result<MmapDataLoader> loader = MmapDataLoader::open(path.c_str());
  ASSERT_TRUE(loader.ok());
  check_loader(*loader, data);
  Result<FreeableBuffer> a = loader->load(0, 10);
  Result<FreeableBuffer> b = loader->load(4096, 10);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(static_cast<const uint8_t*>(b->data()) - static_cast<const uint8_t*>(a->data()), 4096);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a->data()) % 4096, 0u);  // page-aligned mapping
}

TEST(MmapDataLoaderTest, LockIgnoringErrorsAlwaysMaps) {
  std::vector<uint8_t> data = pattern(1500);
  std::string path = write_file("mmap_lock.bin", data.data(), data.size());
  Result<MmapDataLoader> loader = MmapDataLoader::open(path.c_str(), MmapDataLoader::Lock::MlockIgnoreErrors);
  ASSERT_TRUE(loader.ok());
  check_loader(*loader, data);
  // Mlock either succeeds or reports AccessFailed (RLIMIT_MEMLOCK), never anything else.
  Result<MmapDataLoader> locked = MmapDataLoader::open(path.c_str(), MmapDataLoader::Lock::Mlock);
  if (locked.ok()) {
    check_loader(*locked, data);
  } else {
    EXPECT_EQ(locked.error(), Error::AccessFailed);
  }
}

TEST(MmapDataLoaderTest, OpenErrors) {
  EXPECT_EQ(MmapDataLoader::open(nullptr).error(), Error::InvalidArgument);
  EXPECT_EQ(MmapDataLoader::open((temp_dir() + "/nonexistent.pte").c_str()).error(), Error::AccessFailed);
  EXPECT_EQ(MmapDataLoader::open(temp_dir().c_str()).error(), Error::AccessFailed);
  std::string empty = write_file("empty.bin", nullptr, 0);
  EXPECT_EQ(MmapDataLoader::open(empty.c_str()).error(), Error::AccessFailed);
}

// A program file runs identically through each loader.
void run_matmul(DataLoader* loader) {
  Diagnostic diag;
  Result<Program> program = Program::load(loader, Program::Verification::Full, &diag);
  ASSERT_TRUE(program.ok()) << diag.text();
  Result<MethodMeta> meta = program->method_meta("matmul");
  ASSERT_TRUE(meta.ok());
  alignas(64) static uint8_t method_mem[16384];
  std::vector<std::vector<uint8_t>> arenas;
  std::vector<Span<uint8_t>> spans;
  for (size_t i = 0; i < meta->num_arenas(); ++i) arenas.emplace_back(*meta->arena_size(i));
  for (auto& a : arenas) spans.emplace_back(a.data(), a.size());
  MemoryAllocator alloc(method_mem, sizeof(method_mem));
  MemoryManager memory;
  memory.method_allocator = &alloc;
  memory.planned_arenas = Span<Span<uint8_t>>(spans.data(), spans.size());
  Result<Method> method = program->load_method("matmul", &memory, &diag);
  ASSERT_TRUE(method.ok()) << diag.text();
  float a[6] = {1, 0, 0, 0, 1, 1};
  testing::TensorHolder in(ScalarType::Float32, {2, 3}, a);
  ASSERT_EQ(method->set_input(0, in.value), Error::Ok);
  ASSERT_EQ(method->execute(), Error::Ok) << method->last_error_message();
  const float* out = method->output(0).as_tensor->data_as<const float>();
  // Row 0 = w[0] = {0,1,2,3}; row 1 = w[1] + w[2] = {4+8, 5+9, 6+10, 7+11}.
  const float expected[8] = {0, 1, 2, 3, 12, 14, 16, 18};
  for (int i = 0; i < 8; ++i) EXPECT_EQ(out[i], expected[i]) << i;
}

TEST(LoaderProgramTest, SameProgramThroughEveryLoader) {
  PteBytes pte = testing::kitchen_sink_program();
  std::string path = write_file("kitchen_sink.pte", pte.data(), pte.size());
  {
    BufferDataLoader loader(pte.data(), pte.size());
    run_matmul(&loader);
  }
  {
    Result<FileDataLoader> loader = FileDataLoader::open(path.c_str());
    ASSERT_TRUE(loader.ok());
    run_matmul(&*loader);
  }
  {
    Result<MmapDataLoader> loader = MmapDataLoader::open(path.c_str());
    ASSERT_TRUE(loader.ok());
    run_matmul(&*loader);
  }
}

TEST(LoaderProgramTest, NullLoader) {
  Diagnostic diag;
  EXPECT_EQ(Program::load(nullptr, Program::Verification::Full, &diag).error(), Error::InvalidArgument);
  EXPECT_NE(std::strstr(diag.text(), "null"), nullptr) << diag.text();
}

}  // namespace
}  // namespace ember
