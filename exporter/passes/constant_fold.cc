// Constant folding: a node whose every input is a constant is run once at export time with
// the linked portable kernel (the same code the runtime would run), and its outputs become
// constants. Typical wins: weight transposes/reshapes in core-ATen graphs (permute + addmm),
// dtype conversions of buffers, precomputed masks and tables.
#include <cstring>
#include <map>
#include <memory>
#include <set>

#include "exporter/passes/passes.h"
#include "runtime/core/evalue.h"
#include "runtime/kernel/kernel_registry.h"
#include "runtime/memory/memory_allocator.h"

namespace ember {
namespace exporter {
namespace {

// Ops whose results must not be baked in: random samples, uninitialised memory.
bool is_nondeterministic(const std::string& op) {
  static const char* kWords[] = {"rand", "normal", "bernoulli", "uniform", "dropout", "multinomial",
                                 "exponential", "cauchy", "geometric", "log_normal", "poisson", "empty"};
  for (const char* w : kWords) {
    if (op.find(w) != std::string::npos) return true;
  }
  return false;
}

// Storage behind the EValues of one kernel call.
class CallFrame {
 public:
  explicit CallFrame(Graph& g) : g_(g) {}

  // False when the argument cannot be materialised without running the graph.
  bool add(const Arg& a) {
    EValue v;
    switch (a.kind) {
      case Arg::Kind::None:
        break;
      case Arg::Kind::Int:
        v.tag = ValueTag::Int;
        v.as_int = a.i;
        break;
      case Arg::Kind::Double:
        v.tag = ValueTag::Double;
        v.as_double = a.d;
        break;
      case Arg::Kind::Bool:
        v.tag = ValueTag::Bool;
        v.as_bool = a.b;
        break;
      case Arg::Kind::String:
        v.tag = ValueTag::String;
        v.as_string = StringValue{a.s.c_str(), a.s.size()};
        break;
      case Arg::Kind::Ints:
      case Arg::Kind::SymInts: {
        for (int r : a.refs) {
          if (r >= 0) return false;  // symbolic
        }
        ints_.emplace_back(new int64_t[a.ints.size() + 1]);
        std::copy(a.ints.begin(), a.ints.end(), ints_.back().get());
        v.tag = ValueTag::IntList;
        v.as_int_list = IntListValue{ints_.back().get(), nullptr, nullptr, a.ints.size()};
        break;
      }
      case Arg::Kind::Doubles:
        doubles_.emplace_back(new double[a.doubles.size() + 1]);
        std::copy(a.doubles.begin(), a.doubles.end(), doubles_.back().get());
        v.tag = ValueTag::DoubleList;
        v.as_double_list = Span<const double>(doubles_.back().get(), a.doubles.size());
        break;
      case Arg::Kind::Bools:
        bools_.emplace_back(new bool[a.bools.size() + 1]);
        for (size_t i = 0; i < a.bools.size(); ++i) bools_.back()[i] = a.bools[i];
        v.tag = ValueTag::BoolList;
        v.as_bool_list = Span<const bool>(bools_.back().get(), a.bools.size());
        break;
      case Arg::Kind::Tensor: {
        Tensor* t = constant_tensor(a.ref);
        if (t == nullptr) return false;
        v.tag = ValueTag::Tensor;
        v.as_tensor = t;
        break;
      }
      case Arg::Kind::Tensors:
      case Arg::Kind::OptionalTensors: {
        lists_.emplace_back(new Tensor*[a.refs.size() + 1]);
        for (size_t i = 0; i < a.refs.size(); ++i) {
          if (a.refs[i] < 0 && a.kind == Arg::Kind::OptionalTensors) {
            lists_.back()[i] = nullptr;
            continue;
          }
          Tensor* t = constant_tensor(a.refs[i]);
          if (t == nullptr) return false;
          lists_.back()[i] = t;
        }
        v.tag = a.kind == Arg::Kind::Tensors ? ValueTag::TensorList : ValueTag::OptionalTensorList;
        v.as_tensor_list = Span<Tensor* const>(lists_.back().get(), a.refs.size());
        break;
      }
      default:
        return false;  // SymInt / SymBool: computed at run time
    }
    values_.push_back(v);
    return true;
  }

  // An output tensor with fresh storage at its (static) size.
  bool add_output(int id) {
    const Value& val = g_.values[id];
    if (val.type != ValueType::Tensor || val.is_dynamic()) return false;
    Tensor* t = new_tensor(val);
    buffers_.emplace_back(new double[val.nbytes() / 8 + 2]);
    t->data = buffers_.back().get();
    t->capacity_bytes = val.nbytes();
    outputs_.push_back({id, t});
    EValue v;
    v.tag = ValueTag::Tensor;
    v.as_tensor = t;
    values_.push_back(v);
    return true;
  }

  std::vector<EValue*> pointers() {
    std::vector<EValue*> p;
    for (EValue& v : values_) p.push_back(&v);
    return p;
  }
  const std::vector<std::pair<int, Tensor*>>& outputs() const { return outputs_; }
  size_t input_bytes() const { return input_bytes_; }

 private:
  Tensor* new_tensor(const Value& val) {
    tensors_.emplace_back(new Tensor());
    sizes_.emplace_back(new int64_t[val.sizes.size() + 1]);
    std::copy(val.sizes.begin(), val.sizes.end(), sizes_.back().get());
    Tensor* t = tensors_.back().get();
    t->dtype = val.dtype;
    t->rank = static_cast<uint8_t>(val.sizes.size());
    t->sizes = sizes_.back().get();
    t->max_sizes = sizes_.back().get();
    return t;
  }

  Tensor* constant_tensor(int id) {
    if (id < 0) return nullptr;
    const Value& val = g_.values[id];
    if (val.role != ValueRole::Constant || val.constant < 0 || val.type != ValueType::Tensor) return nullptr;
    Constant& c = g_.constants[val.constant];
    if (c.data.size() < val.nbytes()) return nullptr;
    Tensor* t = new_tensor(val);
    t->data = c.data.data();
    t->capacity_bytes = c.data.size();
    input_bytes_ += c.data.size();
    return t;
  }

  Graph& g_;
  std::vector<EValue> values_;
  std::vector<std::unique_ptr<Tensor>> tensors_;
  std::vector<std::unique_ptr<int64_t[]>> sizes_;
  std::vector<std::unique_ptr<int64_t[]>> ints_;
  std::vector<std::unique_ptr<double[]>> doubles_;
  std::vector<std::unique_ptr<bool[]>> bools_;
  std::vector<std::unique_ptr<Tensor*[]>> lists_;
  std::vector<std::unique_ptr<double[]>> buffers_;
  std::vector<std::pair<int, Tensor*>> outputs_;
  size_t input_bytes_ = 0;
};

}  // namespace

absl::StatusOr<int> fold_constants(Graph& g) {
  std::vector<double> temp(8 << 20);  // 64 MB of kernel scratch
  int folded = 0;
  // Values written by more than one node (a producer and later in-place writes, e.g. T5's
  // `buckets = zeros(); buckets += ...`) stay activations: folding the producer would turn
  // the buffer the later writes target into a read-only constant.
  std::map<int, int> writers;
  for (const Node& n : g.nodes) {
    if (n.erased) continue;
    for (int r : n.output_values()) ++writers[r];
  }
  for (Node& n : g.nodes) {
    if (n.erased || n.op.rfind("aten::", 0) != 0 || is_nondeterministic(n.op)) continue;
    KernelFn fn = find_kernel(n.kernel_name().c_str());
    if (fn == nullptr) continue;
    // Outputs must be fresh values (not in-place writes into an input).
    std::set<int> read;
    for (const Arg& a : n.args) for (int r : a.value_refs()) read.insert(r);
    bool ok = !n.outputs.empty();
    CallFrame frame(g);
    for (const Arg& a : n.args) ok = ok && frame.add(a);
    size_t output_bytes = 0;
    for (const Arg& o : n.outputs) {
      if (!ok) break;
      if (o.kind != Arg::Kind::Tensor && o.kind != Arg::Kind::Tensors) ok = false;
      for (int r : o.value_refs()) {
        ok = ok && !read.count(r) && writers[r] == 1 && g.values[r].role == ValueRole::Activation &&
             frame.add_output(r);
        if (ok) output_bytes += g.values[r].nbytes();
      }
    }
    // Do not let folding grow the program much (e.g. an expand of a small buffer).
    if (!ok || output_bytes > 2 * frame.input_bytes() + (64 << 10)) continue;
    MemoryAllocator temp_allocator(temp.data(), temp.size() * sizeof(double));
    KernelContext ctx;
    ctx.temp = &temp_allocator;
    ctx.op_name = n.op.c_str();
    std::vector<EValue*> args = frame.pointers();
    if (fn(ctx, args.data(), args.size()) != Error::Ok) continue;  // leave it to run time
    for (const auto& [id, t] : frame.outputs()) {
      Value& v = g.values[id];
      if (static_cast<size_t>(t->numel()) * element_size(t->dtype) != v.nbytes()) return absl::InternalError("folded output changed size");
      Constant c;
      c.name = v.name + "_folded";
      c.dtype = v.dtype;
      c.sizes = v.sizes;
      c.data.assign(static_cast<const uint8_t*>(t->data), static_cast<const uint8_t*>(t->data) + v.nbytes());
      g.constants.push_back(std::move(c));
      v.role = ValueRole::Constant;
      v.constant = static_cast<int>(g.constants.size()) - 1;
      v.producer = -1;
    }
    n.erased = true;
    ++folded;
  }
  if (folded > 0) g.compact();
  return folded;
}

}  // namespace exporter
}  // namespace ember
