// Hostile programs that are well formed: a structure-aware generator of valid FlatBuffer
// programs with adversarial semantics (issue 33), run through the pte fuzzer's harness
// (Program::load Full, every method loaded, zero inputs, execute twice, reset_state). Each
// program must be refused with a message or run; none may crash or touch memory out of bounds
// (CI runs this under ASan + UBSan too).
//
// What a generated method holds: inputs of random dtypes and shapes (zero-sized and large
// dims included), constants, mutable state, planned tensors whose arena offsets overlap each
// other or run past the arena, unplanned tensors, scalars and lists; kernel calls of random
// registered operators (every portable kernel is a candidate) with random argument counts and
// kinds (scalars where tensors are expected, constants and read-only inputs as outputs, the same
// tensor as input and output), moves between unrelated kinds, jumps that form loops, frees.
// Bytes are the program's, so a crash replays from the seed printed in the failure.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "runtime/kernel/kernel_registry.h"
#include "test/fuzz/pte_harness.h"
#include "test/support/program_builder.h"

namespace ember {
namespace {

using testing::Location;
using testing::MethodBuilder;
using testing::ProgramBuilder;
using testing::TensorDesc;

class Generator {
 public:
  explicit Generator(uint32_t seed) : rng_(seed) {}

  testing::PteBytes program() {
    ProgramBuilder pb;
    MethodBuilder& m = pb.method("forward");
    std::vector<uint32_t> tensors, values, inputs;
    const int num_inputs = pick(0, 3);
    for (int i = 0; i < num_inputs; ++i) {
      const uint32_t v = m.input_tensor(dtype(), shape(), coin(4));
      inputs.push_back(v);
      tensors.push_back(v);
    }
    const int num_values = pick(2, 14);
    for (int i = 0; i < num_values; ++i) {
      switch (pick(0, 9)) {
        case 0: case 1: case 2: tensors.push_back(m.planned_tensor(dtype(), shape(), coin(5))); break;
        case 3: {
          const ScalarType t = dtype();
          std::vector<int64_t> s = carried_shape(t);
          std::vector<uint8_t> bytes(testing::tensor_nbytes(t, s));
          for (uint8_t& b : bytes) b = static_cast<uint8_t>(rng_());
          tensors.push_back(m.constant_tensor(t, s, bytes.data(), bytes.size()));
          break;
        }
        case 4: {
          const ScalarType t = dtype();
          std::vector<int64_t> s = carried_shape(t);
          std::vector<uint8_t> bytes(testing::tensor_nbytes(t, s), 0);
          tensors.push_back(m.state_tensor(t, s, bytes.data(), bytes.size()));
          break;
        }
        case 5: {
          // A planned tensor at a random offset: overlapping others, misaligned, or past the end.
          TensorDesc d;
          d.dtype = dtype();
          d.sizes = shape();
          d.arena_offset = static_cast<uint64_t>(pick(0, 4096)) * (coin(2) ? 1 : 8);
          if (coin(6)) d.nbytes = pick(0, 64);
          tensors.push_back(m.add_tensor(d));
          break;
        }
        case 6: tensors.push_back(m.unplanned_tensor(dtype(), shape())); break;
        case 7: values.push_back(m.int_value(coin(3) ? pick(-3, 5) : static_cast<int64_t>(rng_()) - (1LL << 31))); break;
        case 8: values.push_back(coin(2) ? m.double_value(pick(-4, 4) * 0.5) : m.bool_value(coin(2))); break;
        default: {
          std::vector<int64_t> items(static_cast<size_t>(pick(0, 4)));
          for (int64_t& x : items) x = coin(5) ? static_cast<int64_t>(rng_()) : pick(-2, 6);
          values.push_back(m.int_list(items));
          break;
        }
      }
    }
    if (coin(3)) values.push_back(m.none());
    if (!tensors.empty() && coin(3)) {
      std::vector<int32_t> items;
      for (int i = pick(0, 3); i > 0; --i) items.push_back(static_cast<int32_t>(any_of(tensors)));
      values.push_back(m.tensor_list(items));
    }
    std::vector<uint32_t> all = tensors;
    all.insert(all.end(), values.begin(), values.end());
    if (all.empty()) all.push_back(m.none());
    const int num_instructions = pick(1, 8);
    for (int i = 0; i < num_instructions; ++i) {
      const int kind = pick(0, 19);
      if (kind < 16) {
        const KernelEntry& k = registered_kernel(static_cast<size_t>(pick(0, static_cast<int>(num_registered_kernels()) - 1)));
        const std::string name = k.name;
        const size_t dot = name.rfind('.');
        std::vector<int32_t> args;
        for (int a = pick(0, 9); a > 0; --a) args.push_back(static_cast<int32_t>(any_of(all)));
        // The last argument is the output: usually a planned tensor, sometimes anything.
        if (!tensors.empty()) args.push_back(static_cast<int32_t>(any_of(coin(4) ? all : tensors)));
        m.kernel(dot == std::string::npos ? name : name.substr(0, dot),
                 dot == std::string::npos ? "default" : name.substr(dot + 1), args);
      } else if (kind < 17) {
        m.move(any_of(all), any_of(all));
      } else if (kind < 19) {
        m.jump_false(any_of(all), static_cast<uint32_t>(pick(0, num_instructions)));
      } else {
        m.free_value(any_of(all));
      }
    }
    std::vector<uint32_t> outputs;
    for (int i = pick(0, 2); i > 0; --i) outputs.push_back(any_of(all));
    m.set_inputs(inputs).set_outputs(outputs);
    if (!inputs.empty() && coin(4)) m.set_mutable_inputs({inputs[0]});
    return pb.build();
  }

 private:
  int pick(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
  bool coin(int one_in) { return pick(1, one_in) == 1; }
  uint32_t any_of(const std::vector<uint32_t>& v) { return v[static_cast<size_t>(pick(0, static_cast<int>(v.size()) - 1))]; }
  ScalarType dtype() {
    static const ScalarType kTypes[] = {ScalarType::Float32, ScalarType::Float32, ScalarType::Int64, ScalarType::Int32,
                                        ScalarType::Float16, ScalarType::Int8,    ScalarType::UInt8, ScalarType::Bool,
                                        ScalarType::Float64, ScalarType::BFloat16};
    return kTypes[pick(0, 9)];
  }
  std::vector<int64_t> shape() {
    std::vector<int64_t> s(static_cast<size_t>(pick(0, 4)));
    for (int64_t& d : s) d = coin(8) ? 0 : (coin(10) ? pick(17, 300) : pick(1, 5));
    return s;
  }
  // A shape for a tensor whose bytes the program carries (constants, state): at most 4 MiB,
  // so the generator does not spend seconds writing gigabytes (seed 108,663 drew a 300^4
  // constant). Planned tensors keep shape()'s full range: they cost the loader nothing.
  std::vector<int64_t> carried_shape(ScalarType t) {
    std::vector<int64_t> s = shape();
    while (testing::tensor_nbytes(t, s) > (4u << 20)) s.pop_back();
    return s;
  }
  std::mt19937 rng_;
};

TEST(HostilePrograms, RefusedOrRunNeverCrash) {
  ASSERT_GT(num_registered_kernels(), 100u) << "the portable kernels are linked";
  // EMBER_HOSTILE_SEED=N replays one program (EMBER_HOSTILE_TRACE=1 prints each seed to stderr
  // before running it, so a crash names its seed; EMBER_HOSTILE_DUMP=F also writes its bytes to
  // F, for test/hardening/regressions/pte/); EMBER_HOSTILE_PROGRAMS=N with EMBER_HOSTILE_FIRST=S
  // runs a longer campaign from another range of seeds.
  const char* one = std::getenv("EMBER_HOSTILE_SEED");
  const bool trace = std::getenv("EMBER_HOSTILE_TRACE") != nullptr;
  const char* count = std::getenv("EMBER_HOSTILE_PROGRAMS");
  const char* from = std::getenv("EMBER_HOSTILE_FIRST");
  const uint32_t kPrograms = count ? static_cast<uint32_t>(std::atoi(count)) : 3000;
  const uint32_t first = one ? static_cast<uint32_t>(std::atoi(one)) : from ? static_cast<uint32_t>(std::atoi(from)) : 1;
  const uint32_t last = one ? first : first + kPrograms - 1;
  int loaded = 0, methods = 0, executed = 0;
  for (uint32_t seed = first; seed <= last; ++seed) {
    if (trace) std::fprintf(stderr, "seed %u\n", seed);
    SCOPED_TRACE("seed " + std::to_string(seed));
    Generator g(seed);
    const testing::PteBytes bytes = g.program();
    if (const char* dump = std::getenv("EMBER_HOSTILE_DUMP"); dump != nullptr && one != nullptr) {
      if (FILE* f = std::fopen(dump, "wb")) {
        std::fwrite(bytes.data(), 1, bytes.size(), f);
        std::fclose(f);
      }
    }
    const fuzz::PteOutcome out = fuzz::run_pte_bytes(bytes.data(), bytes.size());
    if (out.load != Error::Ok) {
      EXPECT_FALSE(out.load_message.empty()) << "refused without a message";
      continue;
    }
    ++loaded;
    methods += out.methods_loaded;
    executed += out.executions_ok;
  }
  // The generator must reach past the verifier, or it tests nothing but the verifier.
  std::printf("%u programs: %d loaded, %d methods initialised, %d executions succeeded\n", kPrograms, loaded, methods,
              executed);
  if (one == nullptr) {
    EXPECT_GT(loaded, static_cast<int>(kPrograms / 10));
    EXPECT_GT(methods, 0);
  }
}

}  // namespace
}  // namespace ember
