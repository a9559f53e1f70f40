// Malformed programs: Program::load(Full) must reject them with a precise error, and
// whatever it accepts must load and execute without crashing (run under --config=asan).
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "runtime/executor/method.h"
#include "runtime/loader/buffer_data_loader.h"
#include "runtime/program/file_header.h"
#include "runtime/program/program.h"
#include "test/support/fake_backend.h"
#include "test/support/program_builder.h"
#include "test/support/test_programs.h"

namespace ember {
namespace {

using testing::Location;
using testing::MethodBuilder;
using testing::ProgramBuilder;
using testing::PteBytes;
using testing::TensorDesc;

struct Outcome {
  Error load = Error::Ok;
  int methods_loaded = 0;
  int executions_ok = 0;
  std::string message;
};

// Loads `data` (copied into an exactly sized 64-byte aligned buffer so ASan sees overreads),
// then loads, feeds and runs every method it can. Must never crash.
Outcome try_everything(const uint8_t* data, size_t size) {
  Outcome outcome;
  PteBytes bytes(data, data + size);
  BufferDataLoader loader(bytes.data(), bytes.size());
  Diagnostic diag;
  Result<Program> program = Program::load(&loader, Program::Verification::Full, &diag);
  outcome.load = program.error();
  outcome.message = diag.text();
  if (!program.ok()) return outcome;
  for (size_t mi = 0; mi < program->num_methods(); ++mi) {
    const char* name = *program->method_name(mi);
    Result<MethodMeta> meta = program->method_meta(name);
    if (!meta.ok()) continue;  // duplicate names are rejected by validation, but be safe
    // Exercise every MethodMeta accessor.
    for (size_t i = 0; i <= meta->num_inputs(); ++i) {
      (void)meta->input_tag(i);
      (void)meta->input_tensor_info(i);
    }
    for (size_t i = 0; i <= meta->num_outputs(); ++i) {
      (void)meta->output_tag(i);
      (void)meta->output_tensor_info(i);
    }
    // Arenas: honour sizes up to 1 MiB; larger ones get nothing (init must then fail).
    std::vector<PteBytes> arenas;
    std::vector<Span<uint8_t>> spans;
    bool too_big = meta->num_arenas() > 16;
    for (size_t i = 0; i < meta->num_arenas() && !too_big; ++i) {
      size_t s = *meta->arena_size(i);
      if (s > (1u << 20)) too_big = true;
      arenas.emplace_back(too_big ? 0 : s, 0);
    }
    for (PteBytes& a : arenas) spans.emplace_back(a.data(), a.size());
    PteBytes method_mem(64 * 1024);
    PteBytes temp_mem(4096);
    MemoryAllocator method_alloc(method_mem.data(), method_mem.size());
    MemoryAllocator temp_alloc(temp_mem.data(), temp_mem.size());
    MemoryManager mm;
    mm.method_allocator = &method_alloc;
    mm.planned_arenas = Span<Span<uint8_t>>(spans.data(), spans.size());
    mm.temp_allocator = &temp_alloc;
    Result<Method> method = program->load_method(name, &mm, &diag);
    if (too_big) {
      EXPECT_FALSE(method.ok());
    }
    if (!method.ok()) continue;
    ++outcome.methods_loaded;
    // Feed every input at its upper-bound shape (zeros), when small enough.
    std::vector<std::vector<uint8_t>> buffers;
    std::vector<std::vector<int64_t>> sizes;
    for (size_t i = 0; i < method->num_inputs(); ++i) {
      Result<TensorInfo> info = meta->input_tensor_info(i);
      if (!info.ok() || info->nbytes > (1u << 20)) continue;
      sizes.emplace_back(info->max_sizes.begin(), info->max_sizes.end());
      buffers.emplace_back(info->nbytes + 1, 0);
      Tensor t;
      t.dtype = info->dtype;
      t.rank = static_cast<uint8_t>(sizes.back().size());
      t.sizes = sizes.back().data();
      t.max_sizes = sizes.back().data();
      t.data = buffers.back().data();
      t.capacity_bytes = info->nbytes;
      EValue v;
      v.tag = ValueTag::Tensor;
      v.as_tensor = &t;
      (void)method->set_input(i, v);
    }
    for (int run = 0; run < 2; ++run) {
      if (method->execute() == Error::Ok) ++outcome.executions_ok;
    }
    (void)method->reset_state();
    if (method->execute() == Error::Ok) ++outcome.executions_ok;
  }
  return outcome;
}

Outcome try_everything(const PteBytes& pte) { return try_everything(pte.data(), pte.size()); }

// Expects Full verification to reject `pte` with `error` and a message containing `needle`.
void expect_rejected(const PteBytes& pte, Error error, const char* needle) {
  Outcome o = try_everything(pte);
  EXPECT_EQ(o.load, error) << error_name(o.load) << ": " << o.message;
  EXPECT_NE(o.message.find(needle), std::string::npos) << "message: " << o.message << "\nexpected: " << needle;
}

TEST(CorruptionTest, KitchenSinkIsValidAndRuns) {
  PteBytes pte = testing::kitchen_sink_program();
  Outcome o = try_everything(pte);
  ASSERT_EQ(o.load, Error::Ok) << o.message;
  EXPECT_EQ(o.methods_loaded, 7);
  EXPECT_EQ(o.executions_ok, 7 * 3);
}

TEST(CorruptionTest, TruncatedAtEveryLength) {
  PteBytes pte = testing::kitchen_sink_program();
  ASSERT_GT(pte.size(), 1000u);
  for (size_t len = 0; len < pte.size(); ++len) {
    Outcome o = try_everything(pte.data(), len);
    ASSERT_EQ(o.load, Error::InvalidProgram) << "length " << len << ": " << o.message;
  }
  // Trailing bytes after the declared segment area are tolerated.
  PteBytes longer = pte;
  longer.resize(pte.size() + 100, 0xAB);
  EXPECT_EQ(try_everything(longer).load, Error::Ok);
}

TEST(CorruptionTest, BadMagic) {
  PteBytes pte = testing::kitchen_sink_program();
  for (size_t i = 0; i < 8; ++i) {
    PteBytes bad = pte;
    bad[i] ^= 0x20;
    expect_rejected(bad, Error::InvalidProgram, "bad magic");
  }
}

TEST(CorruptionTest, WrongFlatBufferIdentifier) {
  ProgramBuilder pb;
  testing::add_broadcast_method(pb, "forward", false);
  pb.set_file_identifier("XXXX");
  expect_rejected(pb.build(), Error::InvalidProgram, "wrong FlatBuffer identifier");
}

TEST(CorruptionTest, VersionNewerThanRuntime) {
  ProgramBuilder pb;
  testing::add_broadcast_method(pb, "forward", false);
  pb.set_format_version(kFormatVersion + 1);
  expect_rejected(pb.build(), Error::VersionMismatch, "newer than this runtime");
  pb.set_format_version(0xFFFFFFFFu);
  expect_rejected(pb.build(), Error::VersionMismatch, "newer than this runtime");
  pb.set_format_version(0);
  expect_rejected(pb.build(), Error::InvalidProgram, "invalid program header");
  pb.set_format_version(kFormatVersion);
  EXPECT_EQ(try_everything(pb.build()).load, Error::Ok);
}

TEST(CorruptionTest, BadHeaderFields) {
  PteBytes pte = testing::kitchen_sink_program();
  FileHeader h;
  ASSERT_TRUE(parse_file_header(pte.data(), &h));
  ASSERT_NE(h.segment_area_size, 0u);
  auto with = [&](void (*edit)(FileHeader&, size_t), const char* needle) {
    PteBytes bad = pte;
    FileHeader copy = h;
    edit(copy, pte.size());
    write_file_header(copy, bad.data());
    expect_rejected(bad, Error::InvalidProgram, needle);
  };
  with([](FileHeader& x, size_t) { x.header_size = 32; }, "invalid program header");
  with([](FileHeader& x, size_t) { x.flatbuffer_offset = 128; }, "invalid program header");
  with([](FileHeader& x, size_t) { x.flatbuffer_size = 4; }, "invalid program header");
  with([](FileHeader& x, size_t n) { x.flatbuffer_size = n; }, "invalid program header");
  with([](FileHeader& x, size_t) { x.flatbuffer_size = ~uint64_t{0}; }, "invalid program header");
  with([](FileHeader& x, size_t) { x.segment_area_offset += 8; }, "segment area");
  with([](FileHeader& x, size_t) { x.segment_area_offset = 64; }, "segment area");  // overlaps the FlatBuffer
  with([](FileHeader& x, size_t n) { x.segment_area_offset = (n + 64) / 64 * 64; }, "segment area");
  with([](FileHeader& x, size_t) { x.segment_area_size += 1; }, "segment area");
  with([](FileHeader& x, size_t) { x.segment_area_size = ~uint64_t{0}; }, "segment area");
  with([](FileHeader& x, size_t) { x.segment_area_offset = ~uint64_t{0} - 63; }, "segment area");
  // A shrunken segment area leaves segments outside it.
  with([](FileHeader& x, size_t) { x.segment_area_size = 64; }, "data segment");
  // A flatbuffer_size cutting the FlatBuffer short fails verification.
  with([](FileHeader& x, size_t) { x.flatbuffer_size = 64; }, "failed verification");
}

// One valid "forward" method that each case below breaks in one way.
struct Case {
  const char* name;
  void (*build)(ProgramBuilder& pb, MethodBuilder& m);
  const char* needle;
};

int32_t I(uint32_t v) { return static_cast<int32_t>(v); }

const Case kCases[] = {
    {"input index", [](ProgramBuilder&, MethodBuilder& m) { m.set_inputs({99}); }, "input 0 of method 'forward' refers to value 99"},
    {"output index", [](ProgramBuilder&, MethodBuilder& m) { m.set_outputs({0, 1000}); }, "output 1"},
    {"kernel arg", [](ProgramBuilder&, MethodBuilder& m) { m.kernel("test::copy", "default", {0, 77}); }, "argument 1 refers to value 77"},
    {"negative kernel arg", [](ProgramBuilder&, MethodBuilder& m) { m.kernel("test::copy", "default", {-1, 0}); }, "refers to value -1"},
    {"op index", [](ProgramBuilder&, MethodBuilder& m) { m.kernel(5, {0, 0}); }, "calls operator 5"},
    {"delegate index", [](ProgramBuilder&, MethodBuilder& m) { m.delegate_call(3, {0}); }, "calls delegate 3"},
    {"delegate arg", [](ProgramBuilder&, MethodBuilder& m) { m.delegate_call(m.delegate("test_fake", -1, {0, 0, 0, 0}), {0, 50}); }, "refers to value 50"},
    {"delegate segment", [](ProgramBuilder&, MethodBuilder& m) { m.delegate("test_fake", 9); }, "delegate 0 refers to data segment 9"},
    {"delegate segment negative", [](ProgramBuilder&, MethodBuilder& m) { m.delegate("test_fake", -2); }, "data segment -2"},
    {"move from", [](ProgramBuilder&, MethodBuilder& m) { m.move(40, 0); }, "moves an invalid value"},
    {"move kinds", [](ProgramBuilder&, MethodBuilder& m) { m.move(m.int_value(1), 0); }, "different kinds"},
    {"jump destination", [](ProgramBuilder&, MethodBuilder& m) { m.jump_false(m.bool_value(false), 10); }, "jumps out of the method"},
    {"jump condition kind", [](ProgramBuilder&, MethodBuilder& m) { m.jump_false(m.int_value(0), 0); }, "not a bool"},
    {"jump condition index", [](ProgramBuilder&, MethodBuilder& m) { m.jump_false(1234, 0); }, "not a bool"},
    {"free", [](ProgramBuilder&, MethodBuilder& m) { m.free_value(500); }, "frees an invalid value"},
    {"arena id", [](ProgramBuilder&, MethodBuilder& m) {
       TensorDesc d; d.sizes = {2}; d.arena_id = 7; m.add_tensor(d); m.set_arena_sizes({128});
     }, "uses arena 7, which does not exist"},
    {"arena overrun", [](ProgramBuilder&, MethodBuilder& m) {
       TensorDesc d; d.sizes = {4}; d.arena_offset = 120; m.add_tensor(d); m.set_arena_sizes({128});
     }, "overruns arena 0"},
    {"arena offset overflow", [](ProgramBuilder&, MethodBuilder& m) {
       // Aligned (a multiple of 8), so the overflow check, not the alignment check, rejects it.
       TensorDesc d; d.sizes = {4}; d.arena_offset = ~uint64_t{0} - 7; m.add_tensor(d); m.set_arena_sizes({128});
     }, "overruns arena 0"},
    {"misaligned arena offset", [](ProgramBuilder&, MethodBuilder& m) {
       TensorDesc d; d.sizes = {4}; d.arena_offset = 2; m.add_tensor(d); m.set_arena_sizes({128});
     }, "is misaligned"},
    {"segment index", [](ProgramBuilder&, MethodBuilder& m) {
       TensorDesc d; d.sizes = {2}; d.location = Location::Constant; d.segment_index = 3; m.add_tensor(d);
     }, "refers to data segment 3"},
    {"segment overrun", [](ProgramBuilder& pb, MethodBuilder& m) {
       TensorDesc d; d.sizes = {4}; d.location = Location::Constant;
       d.segment_index = pb.add_segment(std::vector<float>{1, 2, 3}); m.add_tensor(d);
     }, "reads past the end of data segment"},
    {"state segment", [](ProgramBuilder&, MethodBuilder& m) {
       TensorDesc d; d.sizes = {2}; d.location = Location::MutableState; d.segment_index = 4; m.add_tensor(d);
     }, "refers to data segment 4"},
    {"dtype", [](ProgramBuilder&, MethodBuilder& m) {
       TensorDesc d; d.sizes = {2}; d.dtype = static_cast<ScalarType>(42); d.nbytes = 64; m.add_tensor(d);
     }, "unknown dtype 42"},
    {"location", [](ProgramBuilder&, MethodBuilder& m) {
       TensorDesc d; d.sizes = {2}; d.location = static_cast<Location>(9); m.add_tensor(d);
     }, "unknown data location 9"},
    {"rank", [](ProgramBuilder&, MethodBuilder& m) {
       TensorDesc d; d.sizes = std::vector<int64_t>(17, 1); m.add_tensor(d);
     }, "rank 17"},
    {"negative size", [](ProgramBuilder&, MethodBuilder& m) {
       TensorDesc d; d.sizes = {2, -3}; d.nbytes = 0; m.add_tensor(d);
     }, "invalid size -3"},
    {"huge tensor", [](ProgramBuilder&, MethodBuilder& m) {
       TensorDesc d; d.sizes = {int64_t{1} << 30, int64_t{1} << 30}; d.nbytes = 0; m.add_tensor(d);
     }, "too large"},
    {"huge empty tensor", [](ProgramBuilder&, MethodBuilder& m) {  // pte_fuzzer: strides overflowed
       TensorDesc d; d.sizes = {0, int64_t{1} << 36, int64_t{1} << 30}; d.nbytes = 0; m.add_tensor(d);
     }, "too large"},
    {"capacity", [](ProgramBuilder&, MethodBuilder& m) {
       TensorDesc d; d.sizes = {4}; d.nbytes = 15; m.add_tensor(d);
     }, "capacity is smaller than its sizes"},
    {"dim order length", [](ProgramBuilder&, MethodBuilder& m) {
       TensorDesc d; d.sizes = {2, 2}; d.dim_order = {0}; m.add_tensor(d);
     }, "dim_order length != rank"},
    {"dim order permutation", [](ProgramBuilder&, MethodBuilder& m) {
       TensorDesc d; d.sizes = {2, 2}; d.dim_order = {1, 1}; m.add_tensor(d);
     }, "not a permutation"},
    {"tensor list", [](ProgramBuilder&, MethodBuilder& m) { m.tensor_list({0, I(m.int_value(3))}); }, "which is not a tensor"},
    {"optional tensor list", [](ProgramBuilder&, MethodBuilder& m) { m.optional_tensor_list({-1, -2}); }, "refers to value -2"},
    {"int list ref", [](ProgramBuilder&, MethodBuilder& m) { m.int_list({1, 2}, {-1, 0}); }, "which is not an int"},
    {"int list refs length", [](ProgramBuilder&, MethodBuilder& m) { m.int_list({1, 2}, {-1}); }, "differ in length"},
    // The FlatBuffer verifier accepts a set union type with no table (found by fuzzing).
    {"int list without payload", [](ProgramBuilder&, MethodBuilder& m) { m.value_without_payload(7); }, "value 3 has a kind but no payload"},
    {"tensor without payload", [](ProgramBuilder&, MethodBuilder& m) { m.value_without_payload(6); }, "value 3 has a kind but no payload"},
    {"int without payload", [](ProgramBuilder&, MethodBuilder& m) { m.value_without_payload(2); }, "value 3 has a kind but no payload"},
    {"kernel call without payload", [](ProgramBuilder&, MethodBuilder& m) { m.instruction_without_payload(1); }, "instruction 1 has no payload"},
    {"jump without payload", [](ProgramBuilder&, MethodBuilder& m) { m.instruction_without_payload(4); }, "instruction 1 has no payload"},
    {"unknown instruction kind", [](ProgramBuilder&, MethodBuilder& m) { m.instruction_without_payload(0); }, "instruction 1 has no payload"},
    {"string without payload", [](ProgramBuilder&, MethodBuilder& m) { m.value_without_payload(5); }, "value 3 has a kind but no payload"},
    {"misaligned segment", [](ProgramBuilder& pb, MethodBuilder&) { pb.add_raw_segment_entry(8, 4); }, "not 64-byte aligned"},
    {"segment outside area", [](ProgramBuilder& pb, MethodBuilder&) { pb.add_raw_segment_entry(64 * 1000, 4); }, "lies outside the file"},
    {"segment size overflow", [](ProgramBuilder& pb, MethodBuilder&) { pb.add_raw_segment_entry(0, ~uint64_t{0}); }, "lies outside the file"},
    {"duplicate method", [](ProgramBuilder& pb, MethodBuilder&) { testing::matmul_method(pb, "forward"); }, "two methods are named 'forward'"},
};

TEST(CorruptionTest, OutOfRangeIndicesAndInvalidFields) {
  {
    ProgramBuilder pb;
    testing::add_broadcast_method(pb, "forward", false);
    ASSERT_EQ(try_everything(pb.build()).load, Error::Ok);  // the baseline is valid
  }
  for (const Case& c : kCases) {
    SCOPED_TRACE(c.name);
    ProgramBuilder pb;
    MethodBuilder& m = testing::add_broadcast_method(pb, "forward", false);
    c.build(pb, m);
    expect_rejected(pb.build(), Error::InvalidProgram, c.needle);
  }
}

TEST(CorruptionTest, NoneValueWithoutPayloadIsAccepted) {
  // ValueKind::None carries no data; an exporter may leave its (empty) table out.
  ProgramBuilder pb;
  MethodBuilder& m = testing::add_broadcast_method(pb, "forward", false);
  uint32_t none = m.value_without_payload(1);
  Outcome o = try_everything(pb.build());
  EXPECT_EQ(o.load, Error::Ok) << o.message;
  EXPECT_EQ(o.executions_ok, 3);
  EXPECT_EQ(none, 3u);
}

TEST(CorruptionTest, NoMethods) {
  ProgramBuilder pb;
  expect_rejected(pb.build(), Error::InvalidProgram, "it has no methods");
}

// Deterministic random mutations of a valid program: whatever Full verification accepts
// must load and run without crashing (ASan/UBSan check the "without crashing" part).
TEST(CorruptionTest, RandomByteMutations) {
  PteBytes pte = testing::kitchen_sink_program();
  FileHeader h;
  ASSERT_TRUE(parse_file_header(pte.data(), &h));
  std::mt19937 rng(20240611u);
  const int kMutations = 3000;
  int loaded = 0, methods = 0, executions = 0;
  for (int iter = 0; iter < kMutations; ++iter) {
    PteBytes bad = pte;
    int flips = 1 + static_cast<int>(rng() % 4);
    for (int f = 0; f < flips; ++f) {
      // Mostly inside the FlatBuffer (where the structure is), sometimes anywhere.
      size_t pos = (rng() % 4 != 0) ? h.flatbuffer_offset + rng() % h.flatbuffer_size : rng() % bad.size();
      switch (rng() % 4) {
        case 0: bad[pos] = static_cast<uint8_t>(rng()); break;
        case 1: bad[pos] ^= static_cast<uint8_t>(1u << (rng() % 8)); break;
        case 2: bad[pos] = 0xFF; break;
        default: bad[pos] = 0; break;
      }
    }
    Outcome o = try_everything(bad);
    if (std::getenv("EMBER_FUZZ_TRACE") != nullptr) {
      std::printf("%d %d %d %d\n", iter, static_cast<int>(o.load), o.methods_loaded, o.executions_ok);
    }
    if (o.load == Error::Ok) ++loaded;
    methods += o.methods_loaded;
    executions += o.executions_ok;
    if (o.load != Error::Ok) {
      ASSERT_TRUE(o.load == Error::InvalidProgram || o.load == Error::VersionMismatch)
          << iter << ": " << error_name(o.load);
      ASSERT_FALSE(o.message.empty()) << iter;
    }
  }
  // Sanity: the corpus exercised both rejection and the load/execute paths.
  EXPECT_GT(loaded, 100) << "mutations accepted";
  EXPECT_LT(loaded, kMutations) << "mutations rejected";
  EXPECT_GT(executions, 100);
  std::printf("random mutations: %d of %d loaded, %d methods initialised, %d executions ok\n", loaded,
              kMutations, methods, executions);
}

}  // namespace
}  // namespace ember
