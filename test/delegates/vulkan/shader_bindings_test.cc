// Every Vulkan shader writes only its last num_outputs bindings (shader_library.h): the runtime
// places barriers between dispatches by that rule (vulkan_graph.cc), so a shader that writes
// another binding would race on a GPU that runs dispatches concurrently, and lavapipe, which runs
// them one by one, would never show it (linear_wq.comp's output at binding 4 of 9 did exactly
// that on an H200). This reads the bindings' NonWritable decorations from the compiled SPIR-V of every
// shader; no Vulkan device needed.
#include <map>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "delegates/vulkan/runtime/shader_library.h"

namespace ember {
namespace vulkan {
namespace {

// SPIR-V opcodes and decorations used below (the SPIR-V specification's numbers).
constexpr uint32_t kOpTypeStruct = 30, kOpTypePointer = 32, kOpVariable = 59, kOpDecorate = 71,
                   kOpMemberDecorate = 72;
constexpr uint32_t kDecorationNonWritable = 24, kDecorationBinding = 33;

// Binding -> whether any variable at it is writable (its block not declared readonly).
std::map<uint32_t, bool> writable_bindings(const uint32_t* words, size_t n) {
  std::map<uint32_t, uint32_t> binding_of;     // variable -> binding
  std::set<uint32_t> non_writable;             // ids decorated NonWritable (variables)
  std::set<uint32_t> readonly_structs;         // structs whose member 0 is NonWritable
  std::map<uint32_t, uint32_t> pointee, var_type;
  for (size_t i = 5; i < n;) {
    const uint32_t count = words[i] >> 16, op = words[i] & 0xffff;
    if (count == 0 || i + count > n) break;
    const uint32_t* w = words + i;
    if (op == kOpDecorate && count >= 3) {
      if (w[2] == kDecorationBinding && count >= 4) binding_of[w[1]] = w[3];
      if (w[2] == kDecorationNonWritable) non_writable.insert(w[1]);
    } else if (op == kOpMemberDecorate && count >= 4 && w[3] == kDecorationNonWritable) {
      readonly_structs.insert(w[1]);
    } else if (op == kOpTypePointer && count >= 4) {
      pointee[w[1]] = w[3];
    } else if (op == kOpVariable && count >= 4) {
      var_type[w[2]] = w[1];
    }
    i += count;
  }
  std::map<uint32_t, bool> out;
  for (const auto& [var, binding] : binding_of) {
    const uint32_t block = pointee[var_type[var]];
    const bool readonly = non_writable.count(var) > 0 || readonly_structs.count(block) > 0;
    out[binding] = out[binding] || !readonly;
  }
  return out;
}

TEST(ShaderBindingsTest, EveryShaderWritesOnlyItsOutputBindings) {
  for (int id = 0; id < kNumShaders; ++id) {
    const ShaderInfo& info = shader_info(static_cast<ShaderId>(id));
    ASSERT_GE(info.spirv_words, 5u) << info.name;
    ASSERT_EQ(info.spirv[0], 0x07230203u) << info.name << ": not SPIR-V";
    ASSERT_LE(info.num_bindings, kMaxBindings) << info.name;
    ASSERT_GE(info.num_outputs, 1u) << info.name;
    ASSERT_LE(info.num_outputs, info.num_bindings) << info.name;
    const uint32_t first_output = info.num_bindings - info.num_outputs;
    const std::map<uint32_t, bool> bindings = writable_bindings(info.spirv, info.spirv_words);
    ASSERT_FALSE(bindings.empty()) << info.name;
    for (const auto& [binding, writable] : bindings) {
      EXPECT_LT(binding, info.num_bindings) << info.name << " declares binding " << binding;
      EXPECT_EQ(writable, binding >= first_output)
          << info.name << ": binding " << binding << (writable ? " is written" : " is read-only");
    }
    for (uint32_t o = first_output; o < info.num_bindings; ++o)
      EXPECT_EQ(bindings.count(o), 1u) << info.name << ": its output binding " << o << " is not declared";
  }
}

}  // namespace
}  // namespace vulkan
}  // namespace ember
