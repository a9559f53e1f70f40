// .ptd data files on their own (runtime/program/data_file.h), hand-built: layouts the writer
// never produces (unsorted or duplicate keys, offsets and sizes out of bounds or misaligned,
// sizes that overflow, wrong magic and versions), each refused with a precise error (code +
// a message naming the entry), never a crash (run under --config=asan too); and files that
// are valid. No shared/ needed. Exported programs and their data files: data_file_test.cc.

#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "exporter/emit/data_file_writer.h"
#include "flatbuffers/flatbuffers.h"
#include "runtime/core/content_digest.h"
#include "runtime/loader/buffer_data_loader.h"
#include "runtime/program/data_file.h"
#include "runtime/program/file_header.h"
#include "schema/data_file_generated.h"
#include "test/runtime/data_file_test_util.h"

namespace ember {
namespace {

using exporter::DataFileWriter;
using namespace data_file_testing;

// --- hand-built data files (layouts DataFileWriter never writes) ---

struct CraftedEntry {
  std::string key;
  ScalarType dtype = ScalarType::Float32;
  std::vector<int64_t> sizes;
  uint64_t offset = 0;  // in the segment area
  uint64_t size = 0;
};

// A data file with `entries` written verbatim (order, offsets and sizes as given) and `area`
// as its segment area; each digest is of the bytes it names when those lie in the area.
PteBytes craft(const std::vector<CraftedEntry>& entries, const std::vector<uint8_t>& area,
               uint32_t version = kDataFileFormatVersion) {
  flatbuffers::FlatBufferBuilder fbb;
  std::vector<flatbuffers::Offset<schema::DataEntry>> index;
  for (const CraftedEntry& e : entries) {
    ContentDigest d;
    if (e.offset <= area.size() && e.size <= area.size() - e.offset) d = content_digest(area.data() + e.offset, e.size);
    index.push_back(schema::CreateDataEntry(fbb, fbb.CreateString(e.key), static_cast<schema::ScalarType>(e.dtype),
                                            fbb.CreateVector(e.sizes), e.offset, e.size, d.lo, d.hi));
  }
  fbb.Finish(schema::CreateDataFile(fbb, version, fbb.CreateVector(index)), schema::DataFileIdentifier());
  FileHeader h;
  h.format_version = version;
  h.header_size = kFileHeaderSize;
  h.flatbuffer_offset = kFileHeaderSize;
  h.flatbuffer_size = fbb.GetSize();
  h.segment_area_offset = area.empty() ? 0 : (kFileHeaderSize + fbb.GetSize() + 63) / 64 * 64;
  h.segment_area_size = area.size();
  std::vector<uint8_t> file(area.empty() ? kFileHeaderSize + fbb.GetSize() : h.segment_area_offset + area.size(), 0);
  write_file_header(h, file.data(), kPtdMagic);
  std::memcpy(file.data() + kFileHeaderSize, fbb.GetBufferPointer(), fbb.GetSize());
  if (!area.empty()) std::memcpy(file.data() + h.segment_area_offset, area.data(), area.size());
  return aligned(file);
}

std::vector<uint8_t> pattern(size_t n) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(i * 7 + 1);
  return v;
}

TEST(DataFileTest, CraftedValidFileLoadsAndIndexesAgree) {
  const std::vector<uint8_t> area = pattern(64 + 24);
  PteBytes ptd = craft({{"a", ScalarType::Float32, {4}, 0, 16}, {"b", ScalarType::Int64, {3}, 64, 24}}, area);
  for (Verification v : {Verification::Minimal, Verification::Structure, Verification::Full}) {
    Diagnostic diag;
    Result<DataFile> file = load_data(ptd, v, &diag);
    ASSERT_TRUE(file.ok()) << diag.message;
    ASSERT_EQ(file->num_entries(), 2u);
    for (size_t i = 0; i < file->num_entries(); ++i) {
      DataEntryView e = *file->entry(i);
      DataEntryView f = *file->find(e.key, std::strlen(e.key));
      EXPECT_EQ(e.bytes.data(), f.bytes.data());
      EXPECT_EQ(e.bytes.size(), f.bytes.size());
      EXPECT_GE(e.bytes.data(), ptd.data());
      EXPECT_LE(e.bytes.data() + e.bytes.size(), ptd.data() + ptd.size());
      EXPECT_EQ(reinterpret_cast<uintptr_t>(e.bytes.data()) % kSegmentAlignment, 0u);
    }
    EXPECT_EQ(file->entry(2).error(), Error::NotFound);
    EXPECT_EQ(file->find("c", 1).error(), Error::NotFound);
    EXPECT_EQ(file->find("a", 0).error(), Error::NotFound);  // "" sorts first; absent
    EXPECT_EQ(file->find("ab", 2).error(), Error::NotFound);
    EXPECT_EQ(file->find("a\0", 2).error(), Error::NotFound);  // lengths count, not NULs
    EXPECT_EQ(file->find("b", 1)->dtype, ScalarType::Int64);
  }
}

TEST(DataFileTest, EmptyFileLoads) {
  PteBytes ptd = craft({}, {});
  Diagnostic diag;
  Result<DataFile> file = load_data(ptd, Verification::Full, &diag);
  ASSERT_TRUE(file.ok()) << diag.message;
  EXPECT_EQ(file->num_entries(), 0u);
  EXPECT_EQ(file->find("x", 1).error(), Error::NotFound);
  EXPECT_EQ(file->entry(0).error(), Error::NotFound);
  // And DataFileWriter's empty file.
  DataFileWriter writer;
  PteBytes written = aligned(writer.bytes());
  Result<DataFile> w = load_data(written, Verification::Full, &diag);
  ASSERT_TRUE(w.ok()) << diag.message;
  EXPECT_EQ(w->num_entries(), 0u);
}

TEST(DataFileTest, NullLoaderIsAnArgumentError) {
  Diagnostic diag;
  EXPECT_EQ(DataFile::load(nullptr, Verification::Full, &diag).error(), Error::InvalidArgument);
}

TEST(DataFileTest, UnsortedKeysAreRefused) {
  const std::vector<uint8_t> area = pattern(128);
  PteBytes ptd = craft({{"b", ScalarType::Float32, {4}, 0, 16}, {"a", ScalarType::Float32, {4}, 64, 16}}, area);
  const std::string msg = expect_refused(ptd, Error::InvalidProgram);
  EXPECT_TRUE(contains(msg, "not sorted and unique")) << msg;
  EXPECT_TRUE(contains(msg, "'a' follows 'b'")) << msg;
}

TEST(DataFileTest, DuplicateKeysAreRefused) {
  const std::vector<uint8_t> area = pattern(128);
  PteBytes ptd = craft({{"w", ScalarType::Float32, {4}, 0, 16}, {"w", ScalarType::Float32, {4}, 64, 16}}, area);
  const std::string msg = expect_refused(ptd, Error::InvalidProgram);
  EXPECT_TRUE(contains(msg, "not sorted and unique")) << msg;
  EXPECT_TRUE(contains(msg, "'w' follows 'w'")) << msg;
  // A prefix sorts first ("w" < "w2"); the reverse is out of order.
  PteBytes prefix = craft({{"w2", ScalarType::Float32, {4}, 0, 16}, {"w", ScalarType::Float32, {4}, 64, 16}}, area);
  EXPECT_TRUE(contains(expect_refused(prefix, Error::InvalidProgram), "'w' follows 'w2'"));
}

TEST(DataFileTest, SizeThatDisagreesWithDtypeAndSizesIsRefused) {
  const std::vector<uint8_t> area = pattern(128);
  PteBytes ptd = craft({{"fc.weight", ScalarType::Float32, {2, 3}, 0, 20}}, area);  // needs 24
  const std::string msg = expect_refused(ptd, Error::InvalidProgram);
  EXPECT_TRUE(contains(msg, "'fc.weight' holds 20 bytes")) << msg;
  EXPECT_TRUE(contains(msg, "need 24")) << msg;
}

TEST(DataFileTest, MisalignedOffsetIsRefused) {
  const std::vector<uint8_t> area = pattern(128);
  PteBytes ptd = craft({{"w", ScalarType::Float32, {4}, 4, 16}}, area);
  const std::string msg = expect_refused(ptd, Error::InvalidProgram);
  EXPECT_TRUE(contains(msg, "entry 'w' is misaligned or lies outside the file")) << msg;
}

TEST(DataFileTest, OffsetOutOfBoundsIsRefused) {
  const std::vector<uint8_t> area = pattern(128);
  for (uint64_t offset : {uint64_t{128}, uint64_t{192}, uint64_t{1} << 40, ~uint64_t{63}}) {
    SCOPED_TRACE(offset);
    PteBytes ptd = craft({{"w", ScalarType::Float32, {4}, offset, 16}}, area);
    const std::string msg = expect_refused(ptd, Error::InvalidProgram);
    EXPECT_TRUE(contains(msg, "entry 'w' is misaligned or lies outside the file")) << msg;
    // A Minimal load does not check entries, but entry()/find() bound them: an error, no read.
    Diagnostic diag;
    Result<DataFile> minimal = load_data(ptd, Verification::Minimal, &diag);
    ASSERT_TRUE(minimal.ok()) << diag.message;
    EXPECT_EQ(minimal->entry(0).error(), Error::InvalidProgram);
    EXPECT_EQ(minimal->find("w", 1).error(), Error::InvalidProgram);
  }
  // Ending one byte past the area.
  PteBytes tail = craft({{"w", ScalarType::Float32, {17}, 64, 68}}, pattern(128 + 3));
  EXPECT_TRUE(contains(expect_refused(tail, Error::InvalidProgram), "lies outside the file"));
}

TEST(DataFileTest, BadDtypesAndSizesAreRefused) {
  const std::vector<uint8_t> area = pattern(128);
  PteBytes dtype = craft({{"w", static_cast<ScalarType>(42), {4}, 0, 16}}, area);
  EXPECT_TRUE(contains(expect_refused(dtype, Error::InvalidProgram), "entry 'w' has unknown dtype 42"));
  PteBytes negative = craft({{"w", ScalarType::Float32, {4, -1}, 0, 16}}, area);
  EXPECT_TRUE(contains(expect_refused(negative, Error::InvalidProgram), "entry 'w' has a bad size -1 in dim 1"));
  PteBytes rank = craft({{"w", ScalarType::Float32, std::vector<int64_t>(17, 1), 0, 4}}, area);
  EXPECT_TRUE(contains(expect_refused(rank, Error::InvalidProgram), "entry 'w' has rank 17"));
  PteBytes huge = craft({{"w", ScalarType::Float32, {int64_t{1} << 40, int64_t{1} << 40}, 0, 16}}, area);
  EXPECT_TRUE(contains(expect_refused(huge, Error::InvalidProgram), "entry 'w' has a bad size"));
}

// numel x element size must not wrap: 2^61 float64 elements are 2^64 bytes, which a 64-bit
// product would make 0 (and an empty entry would then "match" sizes it cannot hold).
TEST(DataFileTest, ByteCountOverflowIsRefused) {
  const std::vector<uint8_t> area = pattern(64);
  for (const auto& [dtype, sizes] : std::vector<std::pair<ScalarType, std::vector<int64_t>>>{
           {ScalarType::Float64, {int64_t{1} << 61}},
           {ScalarType::Float32, {int64_t{1} << 31, int64_t{1} << 31}},
           {ScalarType::Int64, {int64_t{1} << 20, int64_t{1} << 21, int64_t{1} << 20}}}) {
    SCOPED_TRACE(describe(dtype, sizes));
    PteBytes ptd = craft({{"w", dtype, sizes, 0, 0}}, area);
    const std::string msg = expect_refused(ptd, Error::InvalidProgram);
    EXPECT_TRUE(contains(msg, "entry 'w' has a bad size")) << msg;
  }
  // The largest float64 vector that fits the bound still reaches the size check.
  PteBytes ok_sizes = craft({{"w", ScalarType::Float64, {int64_t{1} << 59}, 0, 0}}, area);
  EXPECT_TRUE(contains(expect_refused(ok_sizes, Error::InvalidProgram), "but its dtype and sizes need"));
}

TEST(DataFileTest, WrongMagicAndProgramAsDataFile) {
  const std::vector<uint8_t> area = pattern(64);
  PteBytes ptd = craft({{"w", ScalarType::Float32, {4}, 0, 16}}, area);
  PteBytes bad = ptd;
  std::memcpy(bad.data(), "NOTEMBER", 8);
  std::string msg = expect_refused(bad, Error::InvalidProgram);
  EXPECT_TRUE(contains(msg, "bad magic")) << msg;
  EXPECT_TRUE(contains(msg, "EMBERPTD")) << msg;
  // Minimal checks the magic too.
  EXPECT_EQ(load_data(bad, Verification::Minimal, nullptr).error(), Error::InvalidProgram);

  // A program handed over as a data file: say what it is.
  testing::ProgramBuilder pb;
  testing::MethodBuilder& m = pb.method("forward");
  uint32_t x = m.input_tensor(ScalarType::Float32, {4});
  m.set_inputs({x}).set_outputs({x});
  PteBytes pte = pb.build();
  msg = expect_refused(pte, Error::InvalidProgram);
  EXPECT_TRUE(contains(msg, "this is an Ember program (.pte), not a data file (.ptd)")) << msg;

  // A data file whose FlatBuffer carries another identifier.
  PteBytes ident = ptd;
  std::memcpy(ident.data() + kFileHeaderSize + 4, "EMB1", 4);
  msg = expect_refused(ident, Error::InvalidProgram);
  EXPECT_TRUE(contains(msg, "wrong FlatBuffer identifier")) << msg;
}

TEST(DataFileTest, NewerVersionIsAVersionMismatchAndZeroIsInvalid) {
  PteBytes ptd = craft({{"w", ScalarType::Float32, {4}, 0, 16}}, pattern(64));
  PteBytes newer = ptd;
  write_le(newer.data() + 8, kDataFileFormatVersion + 1, 4);
  std::string msg = expect_refused(newer, Error::VersionMismatch);
  EXPECT_TRUE(contains(msg, "data file format version " + std::to_string(kDataFileFormatVersion + 1))) << msg;
  EXPECT_TRUE(contains(msg, "newer than this runtime")) << msg;
  EXPECT_EQ(load_data(newer, Verification::Minimal, nullptr).error(), Error::VersionMismatch);
  write_le(newer.data() + 8, 0xFFFFFFFFu, 4);
  EXPECT_EQ(load_data(newer, Verification::Full, nullptr).error(), Error::VersionMismatch);

  PteBytes zero = ptd;
  write_le(zero.data() + 8, 0, 4);
  msg = expect_refused(zero, Error::InvalidProgram);
  EXPECT_TRUE(contains(msg, "invalid data file header (version 0")) << msg;
}

TEST(DataFileTest, CorruptHeaderFieldsAreRefused) {
  PteBytes ptd = craft({{"w", ScalarType::Float32, {4}, 0, 16}}, pattern(64));
  struct Patch {
    size_t offset, width;
    uint64_t value;
  };
  for (const Patch& p : std::vector<Patch>{{12, 4, 32},          // header_size
                                            {16, 8, 72},          // flatbuffer_offset
                                            {24, 8, 4},           // flatbuffer_size below 8
                                            {24, 8, ~uint64_t{0}},
                                            {32, 8, 96},          // segment area misaligned / overlapping
                                            {32, 8, 64},          // segment area over the FlatBuffer
                                            {32, 8, uint64_t{1} << 62},
                                            {40, 8, ~uint64_t{0}},
                                            {40, 8, 4096}}) {
    SCOPED_TRACE(std::to_string(p.offset) + "=" + std::to_string(p.value));
    PteBytes bad = ptd;
    write_le(bad.data() + p.offset, p.value, p.width);
    for (Verification v : {Verification::Minimal, Verification::Structure, Verification::Full}) {
      Diagnostic diag;
      Result<DataFile> f = load_data(bad, v, &diag);
      EXPECT_EQ(f.error(), Error::InvalidProgram) << diag.message;
      EXPECT_NE(diag.message[0], '\0');
    }
  }
}

TEST(DataFileTest, TruncatedCraftedFileIsRefusedAtEveryLength) {
  PteBytes ptd = craft({{"a", ScalarType::Float32, {4}, 0, 16}, {"b", ScalarType::Float32, {16}, 64, 64}},
                       pattern(128));
  for (size_t n = 0; n < ptd.size(); ++n) {
    SCOPED_TRACE(n);
    PteBytes cut = aligned(ptd.data(), n);
    for (Verification v : {Verification::Minimal, Verification::Structure, Verification::Full}) {
      Diagnostic diag;
      EXPECT_EQ(load_data(cut, v, &diag).error(), Error::InvalidProgram) << diag.message;
    }
  }
}

TEST(DataFileTest, MisalignedBufferIsRefusedNotRead) {
  PteBytes ptd = craft({{"w", ScalarType::Float32, {4}, 0, 16}}, pattern(64));
  PteBytes shifted(ptd.size() + 4);
  std::memcpy(shifted.data() + 4, ptd.data(), ptd.size());
  BufferDataLoader loader(shifted.data() + 4, ptd.size());
  Diagnostic diag;
  EXPECT_EQ(DataFile::load(&loader, Verification::Full, &diag).error(), Error::InvalidProgram);
  EXPECT_TRUE(contains(diag.message, "8-byte aligned")) << diag.message;
}

}  // namespace
}  // namespace ember
