// The exporter's graph IR: values (tensors with dtype and upper-bound sizes, symbolic ints),
// nodes (an operator with its full schema-ordered argument list and its outputs) and
// constants (weight bytes, contiguous).
//
// Node arguments are `Arg`s; an argument that refers to a value (tensor, symbolic int)
// stores the value id. Outputs are Args too (Tensor, Tensors, SymInt, SymBool).
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "runtime/core/scalar_type.h"

namespace ember {
namespace exporter {

struct OpSchema;

enum class ValueType { Tensor, SymInt, SymBool };

enum class ValueRole {
  Activation,    // produced by a node
  UserInput,     // a method input
  Constant,      // parameter, non-mutated buffer, lifted constant: bytes in `constant`
  MutableState,  // a buffer mutated by the graph: persists across calls
};

struct Value {
  int id = -1;
  std::string name;
  ValueType type = ValueType::Tensor;
  ValueRole role = ValueRole::Activation;
  // Tensor: dtype, upper-bound sizes, which dims are dynamic.
  ScalarType dtype = ScalarType::Float32;
  std::vector<int64_t> sizes;
  std::vector<bool> dynamic_dims;
  // SymInt: upper bound (or exact value when not symbolic).
  int64_t sym_upper = 0;
  int constant = -1;  // index into Graph::constants (Constant / MutableState roles)
  int producer = -1;  // node index
  // MutableState that other methods of the program share (export_methods): the buffer's name.
  // Not planned in this method's arena: the runtime gives every method one buffer for it.
  std::string shared_state;

  bool is_dynamic() const {
    for (bool d : dynamic_dims) if (d) return true;
    return false;
  }
  int64_t numel() const {
    int64_t n = 1;
    for (int64_t s : sizes) n *= s;
    return n;
  }
  size_t nbytes() const { return static_cast<size_t>(numel()) * element_size(dtype); }
};

struct Arg {
  enum class Kind {
    None, Tensor, Tensors, OptionalTensors, Int, Ints, Double, Doubles, Bool, Bools, String,
    SymInt,   // ref = value id
    SymInts,  // ints[i] (bound) unless refs[i] >= 0
    SymBool,  // ref = value id
  };
  Kind kind = Kind::None;
  int64_t i = 0;
  double d = 0;
  bool b = false;
  std::string s;
  int ref = -1;
  std::vector<int64_t> ints;
  std::vector<double> doubles;
  std::vector<bool> bools;
  std::vector<int> refs;  // Tensors / OptionalTensors (-1: None) / SymInts (-1: constant)

  static Arg none() { return Arg(); }
  static Arg tensor(int id) { Arg a; a.kind = Kind::Tensor; a.ref = id; return a; }
  static Arg integer(int64_t v) { Arg a; a.kind = Kind::Int; a.i = v; return a; }
  static Arg real(double v) { Arg a; a.kind = Kind::Double; a.d = v; return a; }
  static Arg boolean(bool v) { Arg a; a.kind = Kind::Bool; a.b = v; return a; }
  static Arg int_list(std::vector<int64_t> v) { Arg a; a.kind = Kind::Ints; a.ints = std::move(v); return a; }
  static Arg tensor_list(std::vector<int> ids) { Arg a; a.kind = Kind::Tensors; a.refs = std::move(ids); return a; }

  // Value ids this argument reads (tensors and symbolic values).
  std::vector<int> value_refs() const;
};

struct Node {
  std::string op;        // "aten::add"
  std::string overload;  // "Tensor", "default"
  std::vector<std::string> arg_names;  // parallel to args
  std::vector<Arg> args;     // full schema order, defaults filled (when `schema` is known)
  std::vector<Arg> outputs;  // Tensor / Tensors / SymInt / SymBool
  std::string source;        // last frame of the stack trace ("file:line in fn")
  std::string name;          // .pt2 node name (debug info); nodes a pass made keep their origin's
  const OpSchema* schema = nullptr;
  bool erased = false;

  std::string kernel_name() const { return op + "." + overload; }
  std::vector<int> output_values() const;
};

struct Constant {
  std::string name;
  ScalarType dtype = ScalarType::Float32;
  std::vector<int64_t> sizes;
  std::vector<uint8_t> data;  // contiguous, little-endian
};

// An output of the graph: a value (tensor or sym int), or a constant int.
struct GraphOutput {
  int value = -1;
  bool is_int = false;
  int64_t int_value = 0;
};

// A state write-back: after the graph, `from` is copied into `to` (a MutableState or
// UserInput tensor).
struct WriteBack {
  int from = -1;
  int to = -1;
};

struct Graph {
  std::vector<Value> values;
  std::vector<Node> nodes;
  std::vector<Constant> constants;
  std::vector<int> inputs;  // user inputs, in order (value ids)
  std::vector<GraphOutput> outputs;
  std::vector<WriteBack> write_backs;
  // User inputs the model mutates (PyTorch user-input mutations): the only inputs a node may
  // write. Every other input is read-only (the caller's memory may be bound zero-copy).
  std::set<int> mutable_inputs;
  std::map<std::string, int> by_name;  // value name -> id
  std::string torch_version;  // the PyTorch that wrote the .pt2 (model.json), "" when unknown

  int add_value(Value v);
  // Adds `c` to the constants and a Constant-role value for it (named like it, static sizes);
  // returns the value id.
  int add_constant(Constant c);
  // The same from `nbytes` contiguous little-endian bytes at `data`.
  int add_constant(const std::string& name, ScalarType dtype, const std::vector<int64_t>& sizes, const void* data,
                   size_t nbytes);
  // Value id by name, or -1.
  int find(const std::string& name) const;
  // Merges value `from` into `to`: every read (node args, graph outputs, write-backs) and
  // every in-place write (node outputs) of `from` now refers to `to`.
  void replace_uses(int from, int to);
  // Number of reads of each value by live nodes, graph outputs and write-backs.
  std::vector<int> use_counts() const;
  // For each value, the live nodes that read it (node indices, in order), and -1 for each
  // graph output or write-back that reads it.
  std::vector<std::vector<int>> value_readers() const;
  // Removes erased nodes and renumbers producers.
  void compact();
  // For each node, the earlier live nodes it must stay after: the last writer of each value
  // it reads (read after write), and for each value it writes, the previous writer and every
  // reader since (write after write, write after read; in-place ops write existing values).
  // Erased nodes have none. Passes that move or merge nodes keep these edges.
  std::vector<std::vector<int>> node_dependencies() const;
  size_t num_live_nodes() const;
};

std::string dtype_name(ScalarType t);
std::string shape_string(const Value& v);

}  // namespace exporter
}  // namespace ember
