// The smallest useful Ember application, for measuring the runtime's code size
// (tools/size/measure_size.sh): load a program from a file with full verification, run
// method "forward" once with the one kernel it needs (registered here), print the output.
//
//   minimal_runner model.pte    ->  "2 3 4 5" for the program make_size_program writes
#include <cstdio>

#include "runtime/executor/method.h"
#include "runtime/kernel/kernel_registry.h"
#include "runtime/loader/file_data_loader.h"
#include "runtime/program/program.h"

namespace {

using namespace ember;  // NOLINT

// size::add_one.default(Tensor self f32, Tensor out f32): out = self + 1.
Error add_one(KernelContext& ctx, EValue** args, size_t num_args) {
  if (num_args != 2 || !args[0]->is_tensor() || !args[1]->is_tensor()) {
    return ctx.fail(Error::InvalidArgument, "expects (self, out)");
  }
  const Tensor& in = *args[0]->as_tensor;
  Tensor& out = *args[1]->as_tensor;
  if (in.dtype != ScalarType::Float32 || out.dtype != ScalarType::Float32 ||
      resize_tensor(out, Span<const int64_t>(in.sizes, in.rank)) != Error::Ok ||
      out.nbytes() > out.capacity_bytes) {
    return ctx.fail(Error::InvalidArgument, "bad tensors");
  }
  for (int64_t i = 0; i < in.numel(); ++i) out.data_as<float>()[i] = in.data_as<const float>()[i] + 1.0f;
  return Error::Ok;
}
EMBER_REGISTER_KERNEL("size::add_one.default", add_one);

alignas(64) uint8_t g_method_memory[4096];
alignas(64) uint8_t g_arena[1024];

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  Result<FileDataLoader> loader = FileDataLoader::open(argv[1]);
  if (!loader.ok()) return 1;
  Diagnostic diag;
  Result<Program> program = Program::load(&*loader, Program::Verification::Full, &diag);
  if (!program.ok()) {
    std::printf("load failed: %s\n", diag.text());
    return 1;
  }
  Result<MethodMeta> meta = program->method_meta("forward");
  if (!meta.ok() || meta->num_arenas() != 1 || *meta->arena_size(0) > sizeof(g_arena)) return 1;
  Span<uint8_t> arenas[1] = {Span<uint8_t>(g_arena, sizeof(g_arena))};
  MemoryAllocator method_allocator(g_method_memory, sizeof(g_method_memory));
  MemoryManager memory;
  memory.method_allocator = &method_allocator;
  memory.planned_arenas = Span<Span<uint8_t>>(arenas, 1);
  Result<Method> method = program->load_method("forward", &memory, &diag);
  if (!method.ok()) {
    std::printf("init failed: %s\n", diag.text());
    return 1;
  }
  float x[4] = {1, 2, 3, 4};
  int64_t sizes[1] = {4};
  Tensor input;
  input.dtype = ScalarType::Float32;
  input.rank = 1;
  input.sizes = sizes;
  input.max_sizes = sizes;
  input.data = x;
  input.capacity_bytes = sizeof(x);
  EValue value;
  value.tag = ValueTag::Tensor;
  value.as_tensor = &input;
  if (method->set_input(0, value) != Error::Ok || method->execute() != Error::Ok) {
    std::printf("run failed: %s\n", method->last_error_message());
    return 1;
  }
  const float* y = method->output(0).as_tensor->data_as<const float>();
  std::printf("%g %g %g %g\n", y[0], y[1], y[2], y[3]);
  return 0;
}
