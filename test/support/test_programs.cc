#include "test/support/test_programs.h"

#include <cstring>

namespace ember {
namespace testing {

MethodBuilder& add_broadcast_method(ProgramBuilder& pb, const std::string& name, bool dynamic) {
  MethodBuilder& m = pb.method(name);
  uint32_t x = m.input_tensor(ScalarType::Float32, {4, 3}, dynamic);
  uint32_t bias = m.constant_tensor(ScalarType::Float32, {3}, std::vector<float>{10, 20, 30});
  uint32_t out = m.planned_tensor(ScalarType::Float32, {4, 3}, dynamic);
  m.kernel("test::add", "default", {static_cast<int32_t>(x), static_cast<int32_t>(bias), static_cast<int32_t>(out)});
  m.set_inputs({x}).set_outputs({out});
  return m;
}

MethodBuilder& matmul_method(ProgramBuilder& pb, const std::string& name) {
  MethodBuilder& m = pb.method(name);
  std::vector<float> w(12);
  for (int i = 0; i < 12; ++i) w[i] = static_cast<float>(i);
  uint32_t a = m.input_tensor(ScalarType::Float32, {2, 3});
  uint32_t wt = m.constant_tensor(ScalarType::Float32, {3, 4}, w);
  uint32_t out = m.planned_tensor(ScalarType::Float32, {2, 4});
  m.kernel("test::matmul", "default", {static_cast<int32_t>(a), static_cast<int32_t>(wt), static_cast<int32_t>(out)});
  m.set_inputs({a}).set_outputs({out});
  return m;
}

MethodBuilder& loop_method(ProgramBuilder& pb, const std::string& name) {
  MethodBuilder& m = pb.method(name);
  int32_t x = m.input_tensor(ScalarType::Float32, {4});
  int32_t n = m.int_value(2);
  int32_t y = m.planned_tensor(ScalarType::Float32, {4});
  int32_t i = m.int_value(0);
  int32_t zero = m.int_value(0);
  int32_t one = m.int_value(1);
  int32_t cond = m.bool_value(false);
  int32_t never = m.bool_value(false);
  m.move(zero, i);                                 // 0: i = 0
  m.kernel("test::copy", "default", {x, y});       // 1: y = x
  uint32_t head = m.kernel("test::lt", "default", {i, n, cond});  // 2: cond = i < n
  uint32_t exit_jump = m.jump_false(cond, 0);      // 3: if !cond goto end
  m.kernel("test::add", "default", {y, x, y});     // 4: y += x
  m.kernel("test::add_scalar_int", "default", {i, one, i});  // 5: i += 1
  m.jump_false(never, head);                       // 6: goto 2
  m.patch_jump(exit_jump, m.next_instruction());   // end
  m.set_inputs({static_cast<uint32_t>(x), static_cast<uint32_t>(n)});
  m.set_outputs({static_cast<uint32_t>(y), static_cast<uint32_t>(i)});
  return m;
}

MethodBuilder& counter_method(ProgramBuilder& pb, const std::string& name) {
  MethodBuilder& m = pb.method(name);
  int32_t s = m.state_tensor(ScalarType::Int64, {1}, std::vector<int64_t>{0});
  int32_t one = m.int_value(1);
  int32_t out = m.planned_tensor(ScalarType::Int64, {1});
  m.kernel("test::add_scalar_int", "default", {s, one, s});
  m.kernel("test::copy", "default", {s, out});
  m.set_inputs({}).set_outputs({static_cast<uint32_t>(out)});
  return m;
}

MethodBuilder& delegate_method(ProgramBuilder& pb, const std::string& name) {
  MethodBuilder& m = pb.method(name);
  float scale = 2.0f;
  float bias = 1.0f;
  std::vector<uint8_t> bias_bytes(4);
  std::memcpy(bias_bytes.data(), &bias, 4);
  int32_t blob = static_cast<int32_t>(pb.add_segment(&scale, sizeof(scale)));
  int32_t x = m.input_tensor(ScalarType::Float32, {4});
  int32_t mid = m.planned_tensor(ScalarType::Float32, {4});
  int32_t out = m.planned_tensor(ScalarType::Float32, {4});
  uint32_t d = m.delegate("test_fake", blob, {}, {{"bias", bias_bytes}});
  m.delegate_call(d, {x, mid});
  m.kernel("test::add", "default", {mid, x, out});
  m.set_inputs({static_cast<uint32_t>(x)}).set_outputs({static_cast<uint32_t>(out)});
  return m;
}

MethodBuilder& all_values_method(ProgramBuilder& pb, const std::string& name) {
  MethodBuilder& m = pb.method(name);
  int32_t x = m.input_tensor(ScalarType::Float32, {2, 2});
  TensorDesc cl;
  cl.dtype = ScalarType::Float32;
  cl.sizes = {2, 2};
  cl.dim_order = {1, 0};
  cl.location = Location::Arena;
  cl.arena_offset = 256;
  int32_t channels_last = m.add_tensor(cl);
  int32_t y = m.planned_tensor(ScalarType::Float32, {2, 2});
  int32_t none = m.none();
  int32_t d = m.double_value(0.5);
  int32_t s = m.string_value("mean");
  int32_t sym = m.int_value(7);
  int32_t il = m.int_list({1, 2, 3}, {-1, sym, -1});
  int32_t dl = m.double_list({1.5, -2.5});
  int32_t bl = m.bool_list({true, false, true});
  int32_t tl = m.tensor_list({x, y});
  int32_t otl = m.optional_tensor_list({x, -1, y});
  int32_t unplanned = m.unplanned_tensor(ScalarType::Float32, {2});
  (void)none; (void)d; (void)s; (void)il; (void)dl; (void)bl; (void)tl; (void)otl; (void)unplanned;
  (void)channels_last;
  m.kernel("test::copy", "default", {x, y});
  m.free_value(static_cast<uint32_t>(channels_last));
  m.set_inputs({static_cast<uint32_t>(x)}).set_outputs({static_cast<uint32_t>(y)});
  return m;
}

PteBytes kitchen_sink_program() {
  ProgramBuilder pb;
  add_broadcast_method(pb, "add", false);
  add_broadcast_method(pb, "add_dynamic", true);
  matmul_method(pb, "matmul");
  loop_method(pb, "loop");
  counter_method(pb, "counter");
  delegate_method(pb, "delegate");
  all_values_method(pb, "values");
  return pb.build();
}

Error Harness::load(const uint8_t* data, size_t size, Program::Verification verification) {
  method_.reset();
  program_.reset();
  bytes_.assign(data, data + size);
  loader_.reset(new BufferDataLoader(bytes_.data(), bytes_.size()));
  Result<Program> p = Program::load(loader_.get(), verification, &diag_);
  if (!p.ok()) return p.error();
  program_.reset(new Program(std::move(*p)));
  return Error::Ok;
}

Error Harness::load_method(const char* name, size_t method_bytes, size_t temp_bytes) {
  method_.reset();
  Result<MethodMeta> meta = program_->method_meta(name);
  if (!meta.ok()) return meta.error();
  arenas_.clear();
  arena_spans_.clear();
  for (size_t i = 0; i < meta->num_arenas(); ++i) {
    arenas_.emplace_back(*meta->arena_size(i), 0);
  }
  for (PteBytes& a : arenas_) arena_spans_.emplace_back(a.data(), a.size());
  method_mem_.assign(method_bytes, 0);
  temp_mem_.assign(temp_bytes, 0);
  method_alloc_ = MemoryAllocator(method_mem_.data(), method_mem_.size());
  temp_alloc_ = MemoryAllocator(temp_mem_.data(), temp_mem_.size());
  memory_.method_allocator = &method_alloc_;
  memory_.planned_arenas = Span<Span<uint8_t>>(arena_spans_.data(), arena_spans_.size());
  memory_.temp_allocator = temp_bytes ? &temp_alloc_ : nullptr;
  Result<Method> m = program_->load_method(name, &memory_, &diag_);
  if (!m.ok()) return m.error();
  method_.reset(new Method(std::move(*m)));
  return Error::Ok;
}

}  // namespace testing
}  // namespace ember
