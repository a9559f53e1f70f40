// Python bindings for the Module API (pybind11, Debian's pybind11-dev), built by
// tools/sdk/install.sh against the installed headers and libember.so into PREFIX/python/ember:
//
//   import numpy as np, ember
//   m = ember.Module("mobilenet_v2.pte")
//   (logits,) = m.forward([np.zeros((1, 3, 224, 224), np.float32)])
//
// Inputs are bound without copying (a C-contiguous array of the program's dtype; others are
// rejected rather than silently converted); outputs are copied into new arrays, because the
// Module's output views die at the next execute. Errors raise RuntimeError with the runtime's
// message. Also built by Bazel (//python:_ember.so) for the tests in python/tests.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstring>
#include <string>
#include <vector>

#include "extension/module/module.h"
#include "runtime/version.h"

namespace py = pybind11;

namespace {

// numpy dtype <-> ScalarType. BFloat16 has no numpy dtype.
bool to_scalar_type(const py::dtype& dt, ember::ScalarType* out) {
  const char kind = dt.kind();
  const size_t size = static_cast<size_t>(dt.itemsize());
  using ST = ember::ScalarType;
  if (kind == 'f' && size == 4) *out = ST::Float32;
  else if (kind == 'f' && size == 2) *out = ST::Float16;
  else if (kind == 'f' && size == 8) *out = ST::Float64;
  else if (kind == 'i' && size == 1) *out = ST::Int8;
  else if (kind == 'i' && size == 2) *out = ST::Int16;
  else if (kind == 'i' && size == 4) *out = ST::Int32;
  else if (kind == 'i' && size == 8) *out = ST::Int64;
  else if (kind == 'u' && size == 1) *out = ST::UInt8;
  else if (kind == 'b' && size == 1) *out = ST::Bool;
  else return false;
  return true;
}

py::dtype to_numpy(ember::ScalarType t) {
  using ST = ember::ScalarType;
  switch (t) {
    case ST::Float32: return py::dtype("float32");
    case ST::Float16: return py::dtype("float16");
    case ST::Float64: return py::dtype("float64");
    case ST::Int8: return py::dtype("int8");
    case ST::Int16: return py::dtype("int16");
    case ST::Int32: return py::dtype("int32");
    case ST::Int64: return py::dtype("int64");
    case ST::UInt8: return py::dtype("uint8");
    case ST::Bool: return py::dtype("bool");
    default:
      throw std::runtime_error(std::string("output dtype ") + ember::scalar_type_name(t) +
                               " has no numpy equivalent; read it with the C++ Module API");
  }
}

const char* tag_name(ember::ValueTag tag) {
  switch (tag) {
    case ember::ValueTag::Int: return "int";
    case ember::ValueTag::Double: return "double";
    case ember::ValueTag::Bool: return "bool";
    case ember::ValueTag::None: return "none";
    default: return "other";
  }
}

template <typename T>
T value_or_raise(ember::Expected<T> e) {
  if (!e.ok()) throw std::runtime_error(e.error().to_string());
  return std::move(*e);
}

void raise_if_error(const ember::Status& s) {
  if (!s.ok()) throw std::runtime_error(s.to_string());
}

class PyModule {
 public:
  explicit PyModule(const std::string& path) : module_(path) { raise_if_error(module_.load()); }

  std::vector<std::string> method_names() { return value_or_raise(module_.method_names()); }

  void set_num_threads(size_t n) { raise_if_error(module_.set_num_threads(n)); }

  // {"name", "inputs", "outputs"}: each input/output a dict {"dtype", "shape", "dynamic"} for
  // tensors (shape at the upper bounds) or {"kind": "int" | "double" | "bool" | ...} otherwise.
  py::dict method_meta(const std::string& method) {
    ember::MethodMeta meta = value_or_raise(module_.method_meta(method));
    auto describe = [](ember::Result<ember::TensorInfo> info, ember::ValueTag tag) {
      py::dict d;
      if (info.ok()) {
        d["dtype"] = to_numpy(info->dtype);
        d["shape"] = py::tuple(py::cast(std::vector<int64_t>(info->max_sizes.begin(), info->max_sizes.end())));
        d["dynamic"] = info->dynamic;
      } else {
        d["kind"] = tag_name(tag);
      }
      return d;
    };
    py::list inputs, outputs;
    for (size_t i = 0; i < meta.num_inputs(); ++i) inputs.append(describe(meta.input_tensor_info(i), meta.input_tag(i)));
    for (size_t i = 0; i < meta.num_outputs(); ++i) {
      outputs.append(describe(meta.output_tensor_info(i), meta.output_tag(i)));
    }
    py::dict d;
    d["name"] = std::string(meta.name());
    d["inputs"] = inputs;
    d["outputs"] = outputs;
    return d;
  }

  py::list execute(const std::string& method, const py::list& inputs) {
    // Arrays and sizes stay alive until execute returns (inputs are bound zero-copy).
    std::vector<py::array> arrays;
    std::vector<ember::TensorPtr> tensors;
    arrays.reserve(inputs.size());
    tensors.reserve(inputs.size());
    std::vector<ember::Input> bound;
    bound.reserve(inputs.size());
    for (size_t i = 0; i < inputs.size(); ++i) {
      py::handle item = inputs[i];
      if (py::isinstance<py::bool_>(item)) {
        bound.emplace_back(item.cast<bool>());
      } else if (py::isinstance<py::int_>(item)) {
        bound.emplace_back(item.cast<int64_t>());
      } else if (py::isinstance<py::float_>(item)) {
        bound.emplace_back(item.cast<double>());
      } else if (py::isinstance<py::array>(item)) {
        py::array a = py::reinterpret_borrow<py::array>(item);
        if (!(a.flags() & py::array::c_style)) {
          throw py::value_error("input " + std::to_string(i) + " is not C-contiguous; pass np.ascontiguousarray(x)");
        }
        ember::ScalarType st;
        if (!to_scalar_type(a.dtype(), &st)) {
          throw py::type_error("input " + std::to_string(i) + " has dtype " + py::str(a.dtype()).cast<std::string>() +
                               ", which Ember does not take; convert it with x.astype(...)");
        }
        std::vector<int64_t> sizes(a.shape(), a.shape() + a.ndim());
        arrays.push_back(a);
        // The program reads the data; it writes it only for inputs it mutates in place, as
        // eager PyTorch would (runtime/executor/method.h).
        tensors.push_back(ember::from_blob(const_cast<void*>(a.data()), sizes, st));
        bound.emplace_back(tensors.back());
      } else {
        throw py::type_error("input " + std::to_string(i) + " must be a numpy array, int, float or bool, got " +
                             py::str(py::type::of(item)).cast<std::string>());
      }
    }
    ember::Expected<ember::Outputs> out = [&] {
      py::gil_scoped_release release;  // other Python threads run during inference
      return module_.execute(method, bound);
    }();
    ember::Outputs outputs = value_or_raise(std::move(out));
    py::list result;
    for (const ember::Output& o : outputs) {
      if (!o.is_tensor()) {
        const ember::EValue& v = o.value();
        if (v.tag == ember::ValueTag::Int) result.append(py::int_(v.as_int));
        else if (v.tag == ember::ValueTag::Double) result.append(py::float_(v.as_double));
        else if (v.tag == ember::ValueTag::Bool) result.append(py::bool_(v.as_bool));
        else result.append(py::none());
        continue;
      }
      std::vector<py::ssize_t> shape(o.sizes().begin(), o.sizes().end());
      py::array copy(to_numpy(o.dtype()), shape);
      std::memcpy(copy.mutable_data(), o.tensor().data, o.tensor().nbytes());
      result.append(copy);
    }
    return result;
  }

 private:
  ember::Module module_;
};

}  // namespace

PYBIND11_MODULE(_ember, m) {
  m.doc() = "Ember: run .pte programs (Module API)";
  m.attr("__version__") = EMBER_VERSION_STRING;
  py::class_<PyModule>(m, "Module")
      .def(py::init<const std::string&>(), py::arg("path"), "Opens and verifies the .pte at `path`.")
      .def("method_names", &PyModule::method_names)
      .def("set_num_threads", &PyModule::set_num_threads, py::arg("threads"),
           "Threads for kernels and delegates; call before the first run.")
      .def("method_meta", &PyModule::method_meta, py::arg("method") = "forward",
           "Inputs and outputs of `method`: dtype and shape (upper bounds) of each tensor.")
      .def("execute", &PyModule::execute, py::arg("method"), py::arg("inputs"),
           "Runs `method` on a list of numpy arrays / scalars; returns a list of new numpy arrays.")
      .def("run_method", &PyModule::execute, py::arg("method"), py::arg("inputs"), "The same as execute.")
      .def(
          "forward", [](PyModule& self, const py::list& inputs) { return self.execute("forward", inputs); },
          py::arg("inputs"), "execute('forward', inputs)");
}
