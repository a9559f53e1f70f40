// One kernel call on graph values at export time: the EValues, tensors and list storage
// behind a node's arguments and fresh output buffers. Used by constant folding (inputs are
// constants) and the graph interpreter behind calibration (inputs are earlier activations).
// Not a public API.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include "exporter/ir/graph.h"
#include "runtime/core/evalue.h"

namespace ember {
namespace exporter {

// Storage behind the EValues of one kernel call.
class CallFrame {
 public:
  // Points a non-constant tensor argument's Tensor (dtype and sizes already set) at the
  // value's bytes: data and capacity_bytes; false when the value is not available.
  using BindTensor = std::function<bool(int value_id, Tensor* tensor)>;

  // Constants always bind to their bytes; without `bind`, nothing else does (constant folding).
  explicit CallFrame(Graph& g) : g_(g) {}
  CallFrame(Graph& g, BindTensor bind) : g_(g), bind_(std::move(bind)) {}

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
        Tensor* t = input_tensor(a.ref);
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
          Tensor* t = input_tensor(a.refs[i]);
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

  // A tensor argument: a constant's bytes, else whatever `bind_` points it at.
  Tensor* input_tensor(int id) {
    if (id < 0) return nullptr;
    const Value& val = g_.values[id];
    if (val.type != ValueType::Tensor) return nullptr;
    Tensor* t = new_tensor(val);
    if (val.role == ValueRole::Constant && val.constant >= 0) {
      Constant& c = g_.constants[val.constant];
      if (c.data.size() < val.nbytes()) return nullptr;
      t->data = c.data.data();
      t->capacity_bytes = c.data.size();
    } else if (!bind_ || !bind_(id, t)) {
      return nullptr;
    }
    input_bytes_ += t->capacity_bytes;
    return t;
  }

  Graph& g_;
  BindTensor bind_;
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

}  // namespace exporter
}  // namespace ember
