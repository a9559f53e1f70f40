// The C API over ember::Module. Every entry point catches C++ exceptions (the Module layer's
// STL containers may throw std::bad_alloc) so none crosses the C ABI; failures become a status
// plus a thread-local message.
#include "extension/c/ember_c.h"

#include <cstring>
#include <exception>
#include <map>
#include <memory>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include "runtime/core/error.h"
#include "runtime/core/scalar_type.h"
#include "runtime/core/tensor.h"
#include "extension/module/module.h"
#include "runtime/version.h"


// The enums are the C mirrors of ember::Error and ember::ScalarType: keep them in step.
static_assert(EMBER_INTERNAL == static_cast<int>(ember::Error::Internal), "EmberStatus != ember::Error");
static_assert(EMBER_BACKEND_FAILED == static_cast<int>(ember::Error::BackendFailed), "EmberStatus != ember::Error");
static_assert(EMBER_INVALID_ARGUMENT == static_cast<int>(ember::Error::InvalidArgument), "EmberStatus != ember::Error");
static_assert(EMBER_BOOL == static_cast<int>(ember::ScalarType::Bool), "EmberDtype != ember::ScalarType");
static_assert(EMBER_INT64 == static_cast<int>(ember::ScalarType::Int64), "EmberDtype != ember::ScalarType");
static_assert(EMBER_MAX_RANK <= 255, "Tensor::rank is a uint8_t");
static_assert(sizeof(EmberValueKind) == 4 && sizeof(EmberDtype) == 4, "C enums are 32-bit");

struct EmberModule {
  EmberModule(std::string path, ember::ModuleOptions options) : module(std::move(path), std::move(options)) {}
  ember::Module module;
  // Last successful outputs per method (views into `module`).
  std::map<std::string, ember::Outputs> outputs;
  std::vector<std::string> method_names;  // filled on first use; ember_module_method_name points into it
  std::vector<ember::BundledCaseResult> bundled_results;  // the last ember_module_verify_bundled
};

namespace {

thread_local std::string g_last_error;

EmberStatus fail(EmberStatus status, std::string message) {
  g_last_error = std::move(message);
  return status;
}

EmberStatus from_status(const ember::Status& s) {
  if (s.ok()) return EMBER_OK;
  return fail(static_cast<EmberStatus>(s.code()), s.to_string());
}

// Runs `body` and turns an escaping exception into a status.
template <typename F>
EmberStatus guarded(const char* what, F&& body) {
  try {
    return body();
  } catch (const std::bad_alloc&) {
    return fail(EMBER_OUT_OF_MEMORY, std::string(what) + ": out of host memory");
  } catch (const std::exception& e) {
    return fail(EMBER_INTERNAL, std::string(what) + ": " + e.what() + " (a bug in Ember; please report it)");
  } catch (...) {
    return fail(EMBER_INTERNAL, std::string(what) + ": unknown exception (a bug in Ember; please report it)");
  }
}

EmberStatus check_module(const EmberModule* module, const char* method, const char* what) {
  if (module == nullptr) return fail(EMBER_INVALID_ARGUMENT, std::string(what) + ": module is NULL; open one with ember_module_open");
  if (method == nullptr) return fail(EMBER_INVALID_ARGUMENT, std::string(what) + ": method name is NULL (use \"forward\")");
  return EMBER_OK;
}

EmberValueKind kind_of(ember::ValueTag tag) {
  switch (tag) {
    case ember::ValueTag::Tensor: return EMBER_VALUE_TENSOR;
    case ember::ValueTag::Int: return EMBER_VALUE_INT;
    case ember::ValueTag::Double: return EMBER_VALUE_DOUBLE;
    case ember::ValueTag::Bool: return EMBER_VALUE_BOOL;
    case ember::ValueTag::None: return EMBER_VALUE_NONE;
    default: return EMBER_VALUE_OTHER;
  }
}

// The shape of every entry point that reads `method`'s metadata: the module and method are
// checked, `out` (named `out_name` in messages) must not be NULL, and `body(meta)` runs guarded
// once the metadata is read (a missing method fails with the runtime's message).
template <typename F>
EmberStatus with_meta(EmberModule* module, const char* method, const void* out, const char* out_name,
                      const char* what, F&& body) {
  EmberStatus st = check_module(module, method, what);
  if (st != EMBER_OK) return st;
  if (out == nullptr) return fail(EMBER_INVALID_ARGUMENT, std::string(what) + ": " + out_name + " is NULL");
  return guarded(what, [&]() -> EmberStatus {
    auto meta = module->module.method_meta(method);
    if (!meta.ok()) return from_status(meta.error());
    return body(*meta);
  });
}

EmberStatus value_info(EmberModule* module, const char* method, size_t index, EmberValueInfo* out_info, bool input,
                       const char* what) {
  return with_meta(module, method, out_info, "out_info", what, [&](const ember::MethodMeta& meta) -> EmberStatus {
    const size_t count = input ? meta.num_inputs() : meta.num_outputs();
    if (index >= count) {
      return fail(EMBER_INVALID_ARGUMENT, std::string(what) + ": " + (input ? "input " : "output ") +
                                              std::to_string(index) + " of '" + method + "' does not exist (it has " +
                                              std::to_string(count) + ")");
    }
    *out_info = EmberValueInfo();
    out_info->kind = kind_of(input ? meta.input_tag(index) : meta.output_tag(index));
    if (out_info->kind != EMBER_VALUE_TENSOR) return EMBER_OK;
    auto info = input ? meta.input_tensor_info(index) : meta.output_tensor_info(index);
    if (!info.ok()) {
      return fail(static_cast<EmberStatus>(info.error()), std::string(what) + ": cannot read the tensor's metadata");
    }
    out_info->dtype = static_cast<EmberDtype>(info->dtype);
    out_info->rank = info->max_sizes.size();
    out_info->max_sizes = info->max_sizes.data();  // inside the program: valid until close
    out_info->dynamic = info->dynamic ? 1 : 0;
    out_info->nbytes = info->nbytes;
    return EMBER_OK;
  });
}

// Output `index` of `method`'s last successful execute (the views ember_module_execute kept).
EmberStatus stored_output(EmberModule* module, const char* method, size_t index, const char* what,
                          const ember::Output** out) {
  auto it = module->outputs.find(method);
  if (it == module->outputs.end()) {
    return fail(EMBER_INVALID_STATE, std::string(what) + ": method '" + method +
                                         "' has no outputs yet; call ember_module_execute first");
  }
  if (index >= it->second.size()) {
    return fail(EMBER_INVALID_ARGUMENT, std::string(what) + ": output " + std::to_string(index) + " of '" + method +
                                            "' does not exist (it has " + std::to_string(it->second.size()) + ")");
  }
  *out = &it->second[index];
  return EMBER_OK;
}

EmberStatus count_io(EmberModule* module, const char* method, size_t* out_count, bool inputs, const char* what) {
  return with_meta(module, method, out_count, "out_count", what, [&](const ember::MethodMeta& meta) {
    *out_count = inputs ? meta.num_inputs() : meta.num_outputs();
    return EMBER_OK;
  });
}

// Every ember_module_open*: checks the arguments (messages named after `what`, the entry point
// the caller used; `with_data`: it takes data files, so at least one is required), loads the
// program with its data files, and hands out the module.
EmberStatus open_module(const char* what, const char* path, const char* const* data_paths, size_t num_data_paths,
                        uint32_t flags, EmberModule** out_module, bool with_data) {
  if (out_module == nullptr) return fail(EMBER_INVALID_ARGUMENT, std::string(what) + ": out_module is NULL");
  *out_module = nullptr;
  if (path == nullptr || path[0] == 0) {
    return fail(EMBER_INVALID_ARGUMENT, std::string(what) + ": path is NULL or empty; pass the .pte file's path");
  }
  if (with_data && (data_paths == nullptr || num_data_paths == 0)) {
    return fail(EMBER_INVALID_ARGUMENT, std::string(what) + ": " +
                                            (data_paths == nullptr ? "data_paths is NULL" : "num_data_paths is 0") +
                                            "; pass the .ptd data file(s) the program was exported with "
                                            "(a program without data files opens with ember_module_open)");
  }
  constexpr uint32_t kKnownFlags = EMBER_OPEN_ALLOW_UPDATED_WEIGHTS;
  if ((flags & ~kKnownFlags) != 0) {
    return fail(EMBER_INVALID_ARGUMENT, std::string(what) + ": unknown flag bits " +
                                            std::to_string(flags & ~kKnownFlags) +
                                            "; pass EmberOpenFlags values (EMBER_OPEN_ALLOW_UPDATED_WEIGHTS)");
  }
  return guarded(what, [&]() -> EmberStatus {
    ember::ModuleOptions options;
    options.allow_updated_weights = (flags & EMBER_OPEN_ALLOW_UPDATED_WEIGHTS) != 0;
    for (size_t i = 0; i < num_data_paths; ++i) {
      if (data_paths[i] == nullptr || data_paths[i][0] == 0) {
        return fail(EMBER_INVALID_ARGUMENT, std::string(what) + ": data_paths[" + std::to_string(i) +
                                                "] is NULL or empty; pass each .ptd data file's path");
      }
      options.data_files.emplace_back(data_paths[i]);
    }
    auto m = std::make_unique<EmberModule>(path, std::move(options));
    ember::Status loaded = m->module.load();
    if (!loaded.ok() && loaded.code() == ember::Error::NotFound && num_data_paths == 0) {
      // Without data files, Module::load's only NotFound is a program whose weights are in one
      // (the runtime's message names the file and the C++ / command-line ways to pass it).
      return fail(EMBER_NOT_FOUND, loaded.to_string() + " (from C: ember_module_open_with_data)");
    }
    EmberStatus st = from_status(loaded);
    if (st != EMBER_OK) return st;
    *out_module = m.release();
    return EMBER_OK;
  });
}

}  // namespace

extern "C" {

const char* ember_last_error(void) { return g_last_error.c_str(); }

const char* ember_version(void) { return EMBER_VERSION_STRING; }

EmberStatus ember_module_open(const char* path, EmberModule** out_module) {
  return open_module("ember_module_open", path, nullptr, 0, EMBER_OPEN_DEFAULT, out_module, false);
}

EmberStatus ember_module_open_with_data(const char* path, const char* const* data_paths, size_t num_data_paths,
                                        EmberModule** out_module) {
  return open_module("ember_module_open_with_data", path, data_paths, num_data_paths, EMBER_OPEN_DEFAULT, out_module,
                     true);
}

EmberStatus ember_module_open_with_flags(const char* path, const char* const* data_paths, size_t num_data_paths,
                                         uint32_t flags, EmberModule** out_module) {
  return open_module("ember_module_open_with_flags", path, data_paths, num_data_paths, flags, out_module, true);
}

void ember_module_close(EmberModule* module) { delete module; }

EmberStatus ember_module_set_num_threads(EmberModule* module, size_t threads) {
  EmberStatus st = check_module(module, "forward", "ember_module_set_num_threads");
  if (st != EMBER_OK) return st;
  return guarded("ember_module_set_num_threads", [&]() -> EmberStatus {
    module->outputs.clear();  // methods reload: old output views die
    return from_status(module->module.set_num_threads(threads));
  });
}

EmberStatus ember_module_load_method(EmberModule* module, const char* method) {
  EmberStatus st = check_module(module, method, "ember_module_load_method");
  if (st != EMBER_OK) return st;
  return guarded("ember_module_load_method",
                 [&]() -> EmberStatus { return from_status(module->module.load_method(method)); });
}

EmberStatus ember_module_method_count(EmberModule* module, size_t* out_count) {
  const char* what = "ember_module_method_count";
  EmberStatus st = check_module(module, "forward", what);
  if (st != EMBER_OK) return st;
  if (out_count == nullptr) return fail(EMBER_INVALID_ARGUMENT, std::string(what) + ": out_count is NULL");
  return guarded(what, [&]() -> EmberStatus {
    // Read once: the names handed out point into this vector until close.
    if (module->method_names.empty()) {
      auto names = module->module.method_names();
      if (!names.ok()) return from_status(names.error());
      module->method_names = std::move(*names);
    }
    *out_count = module->method_names.size();
    return EMBER_OK;
  });
}

EmberStatus ember_module_method_name(EmberModule* module, size_t index, const char** out_name) {
  const char* what = "ember_module_method_name";
  if (out_name == nullptr) return fail(EMBER_INVALID_ARGUMENT, std::string(what) + ": out_name is NULL");
  size_t count = 0;
  EmberStatus st = ember_module_method_count(module, &count);
  if (st != EMBER_OK) return st;
  if (index >= count) {
    return fail(EMBER_INVALID_ARGUMENT, std::string(what) + ": method " + std::to_string(index) +
                                            " does not exist (the program has " + std::to_string(count) + ")");
  }
  *out_name = module->method_names[index].c_str();
  return EMBER_OK;
}

EmberStatus ember_module_input_info(EmberModule* module, const char* method, size_t index, EmberValueInfo* out_info) {
  return value_info(module, method, index, out_info, true, "ember_module_input_info");
}

EmberStatus ember_module_output_info(EmberModule* module, const char* method, size_t index,
                                     EmberValueInfo* out_info) {
  return value_info(module, method, index, out_info, false, "ember_module_output_info");
}

EmberStatus ember_module_num_delegates(EmberModule* module, const char* method, size_t* out_count) {
  return with_meta(module, method, out_count, "out_count", "ember_module_num_delegates",
                   [&](const ember::MethodMeta& meta) {
                     *out_count = meta.num_delegates();
                     return EMBER_OK;
                   });
}

EmberStatus ember_module_delegate_backend(EmberModule* module, const char* method, size_t index,
                                          const char** out_backend) {
  const char* what = "ember_module_delegate_backend";
  return with_meta(module, method, out_backend, "out_backend", what, [&](const ember::MethodMeta& meta) {
    if (index >= meta.num_delegates()) {
      return fail(EMBER_INVALID_ARGUMENT, std::string(what) + ": delegate " + std::to_string(index) + " of '" +
                                              method + "' does not exist (it has " +
                                              std::to_string(meta.num_delegates()) + ")");
    }
    *out_backend = meta.delegate_backend_id(index);  // inside the program: valid until close
    return EMBER_OK;
  });
}

EmberStatus ember_module_planned_bytes(EmberModule* module, const char* method, size_t* out_bytes) {
  return with_meta(module, method, out_bytes, "out_bytes", "ember_module_planned_bytes",
                   [&](const ember::MethodMeta& meta) {
                     size_t total = 0;
                     for (size_t i = 0; i < meta.num_arenas(); ++i) {
                       auto size = meta.arena_size(i);
                       if (size.ok()) total += *size;
                     }
                     *out_bytes = total;
                     return EMBER_OK;
                   });
}

EmberStatus ember_module_num_inputs(EmberModule* module, const char* method, size_t* out_count) {
  return count_io(module, method, out_count, true, "ember_module_num_inputs");
}

EmberStatus ember_module_num_outputs(EmberModule* module, const char* method, size_t* out_count) {
  return count_io(module, method, out_count, false, "ember_module_num_outputs");
}

EmberStatus ember_module_set_input(EmberModule* module, const char* method, size_t index, EmberDtype dtype,
                                   const int64_t* sizes, size_t rank, void* data, size_t nbytes) {
  const char* what = "ember_module_set_input";
  EmberStatus st = check_module(module, method, what);
  if (st != EMBER_OK) return st;
  if (!ember::is_valid_scalar_type(static_cast<int>(dtype))) {
    return fail(EMBER_INVALID_ARGUMENT, std::string(what) + ": dtype " + std::to_string(static_cast<int>(dtype)) +
                                            " is not an EmberDtype value");
  }
  if (rank > EMBER_MAX_RANK) {
    return fail(EMBER_INVALID_ARGUMENT, std::string(what) + ": rank " + std::to_string(rank) + " exceeds " +
                                            std::to_string(EMBER_MAX_RANK));
  }
  if (rank > 0 && sizes == nullptr) return fail(EMBER_INVALID_ARGUMENT, std::string(what) + ": sizes is NULL with rank > 0");
  // Element count with overflow checks: sizes come straight from the caller.
  uint64_t numel = 1;
  int64_t dims[EMBER_MAX_RANK] = {};
  for (size_t d = 0; d < rank; ++d) {
    if (sizes[d] < 0) {
      return fail(EMBER_INVALID_ARGUMENT, std::string(what) + ": sizes[" + std::to_string(d) + "] is negative");
    }
    dims[d] = sizes[d];
    if (sizes[d] != 0 && numel > UINT64_MAX / static_cast<uint64_t>(sizes[d])) {
      return fail(EMBER_INVALID_ARGUMENT, std::string(what) + ": the tensor's element count overflows");
    }
    numel *= static_cast<uint64_t>(sizes[d]);
  }
  const uint64_t elem = ember::element_size(static_cast<ember::ScalarType>(dtype));
  if (numel > UINT64_MAX / elem || numel * elem != nbytes) {
    return fail(EMBER_INVALID_ARGUMENT, std::string(what) + ": nbytes is " + std::to_string(nbytes) +
                                            " but a " + ember::scalar_type_name(static_cast<ember::ScalarType>(dtype)) +
                                            " tensor of these sizes has " + std::to_string(numel) + " elements (" +
                                            std::to_string(numel * elem) + " bytes)");
  }
  if (data == nullptr && nbytes != 0) return fail(EMBER_INVALID_ARGUMENT, std::string(what) + ": data is NULL");
  return guarded(what, [&]() -> EmberStatus {
    // bind_input copies the sizes and keeps only the data pointer, so a stack Tensor will do.
    ember::Tensor t;
    t.dtype = static_cast<ember::ScalarType>(dtype);
    t.rank = static_cast<uint8_t>(rank);
    t.sizes = dims;
    t.max_sizes = dims;
    t.data = data;
    t.capacity_bytes = nbytes;
    return from_status(module->module.set_input(method, index, ember::Input(t)));
  });
}

EmberStatus ember_module_set_input_scalar(EmberModule* module, const char* method, size_t index,
                                          const EmberScalar* value) {
  const char* what = "ember_module_set_input_scalar";
  EmberStatus st = check_module(module, method, what);
  if (st != EMBER_OK) return st;
  if (value == nullptr) return fail(EMBER_INVALID_ARGUMENT, std::string(what) + ": value is NULL");
  return guarded(what, [&]() -> EmberStatus {
    switch (value->kind) {
      case EMBER_VALUE_INT: return from_status(module->module.set_input(method, index, ember::Input(value->i)));
      case EMBER_VALUE_DOUBLE: return from_status(module->module.set_input(method, index, ember::Input(value->d)));
      case EMBER_VALUE_BOOL:
        return from_status(module->module.set_input(method, index, ember::Input(value->i != 0)));
      default:
        return fail(EMBER_INVALID_ARGUMENT, std::string(what) + ": value kind " +
                                                std::to_string(static_cast<int>(value->kind)) +
                                                " is not a scalar; use EMBER_VALUE_INT, _DOUBLE or _BOOL (tensors: "
                                                "ember_module_set_input)");
    }
  });
}

EmberStatus ember_module_execute(EmberModule* module, const char* method) {
  EmberStatus st = check_module(module, method, "ember_module_execute");
  if (st != EMBER_OK) return st;
  return guarded("ember_module_execute", [&]() -> EmberStatus {
    std::string name(method);
    module->outputs.erase(name);  // a failed run leaves no stale views behind
    auto out = module->module.execute(name);
    if (!out.ok()) return from_status(out.error());
    module->outputs[name] = *out;
    return EMBER_OK;
  });
}

EmberStatus ember_module_output(EmberModule* module, const char* method, size_t index, EmberTensorView* out_view) {
  const char* what = "ember_module_output";
  EmberStatus st = check_module(module, method, what);
  if (st != EMBER_OK) return st;
  if (out_view == nullptr) return fail(EMBER_INVALID_ARGUMENT, std::string(what) + ": out_view is NULL");
  return guarded(what, [&]() -> EmberStatus {
    const ember::Output* found = nullptr;
    EmberStatus got = stored_output(module, method, index, what, &found);
    if (got != EMBER_OK) return got;
    const ember::Output& o = *found;
    if (!o.is_tensor()) {
      return fail(EMBER_NOT_SUPPORTED, std::string(what) + ": output " + std::to_string(index) +
                                           " is not a tensor; read it with the C++ Module API");
    }
    const ember::Tensor& t = o.tensor();
    if (!t.is_contiguous()) {
      return fail(EMBER_NOT_SUPPORTED, std::string(what) + ": output " + std::to_string(index) +
                                           " is not contiguous; read it with the C++ Module API");
    }
    out_view->dtype = static_cast<EmberDtype>(t.dtype);
    out_view->rank = t.rank;
    out_view->sizes = t.sizes;
    out_view->data = t.data;
    out_view->nbytes = t.nbytes();
    return EMBER_OK;
  });
}

EmberStatus ember_module_output_scalar(EmberModule* module, const char* method, size_t index, EmberScalar* out_value) {
  const char* what = "ember_module_output_scalar";
  EmberStatus st = check_module(module, method, what);
  if (st != EMBER_OK) return st;
  if (out_value == nullptr) return fail(EMBER_INVALID_ARGUMENT, std::string(what) + ": out_value is NULL");
  return guarded(what, [&]() -> EmberStatus {
    const ember::Output* found = nullptr;
    EmberStatus got = stored_output(module, method, index, what, &found);
    if (got != EMBER_OK) return got;
    const ember::Output& o = *found;
    if (o.is_tensor()) {
      return fail(EMBER_INVALID_ARGUMENT, std::string(what) + ": output " + std::to_string(index) +
                                              " is a tensor; read it with ember_module_output");
    }
    const ember::EValue& v = o.value();
    *out_value = EmberScalar();
    out_value->kind = kind_of(v.tag);
    if (v.tag == ember::ValueTag::Int) out_value->i = v.as_int;
    else if (v.tag == ember::ValueTag::Bool) out_value->i = v.as_bool ? 1 : 0;
    else if (v.tag == ember::ValueTag::Double) out_value->d = v.as_double;
    else if (v.tag != ember::ValueTag::None) {
      return fail(EMBER_NOT_SUPPORTED, std::string(what) + ": output " + std::to_string(index) +
                                           " is a list or string; read it with the C++ Module API");
    }
    return EMBER_OK;
  });
}

EmberStatus ember_module_reset_state(EmberModule* module, const char* method) {
  EmberStatus st = check_module(module, method, "ember_module_reset_state");
  if (st != EMBER_OK) return st;
  return guarded("ember_module_reset_state",
                 [&]() -> EmberStatus { return from_status(module->module.reset_state(method)); });
}

EmberStatus ember_module_verify_bundled(EmberModule* module, double rtol, double atol, size_t* out_case_count) {
  const char* what = "ember_module_verify_bundled";
  EmberStatus st = check_module(module, "forward", what);
  if (st != EMBER_OK) return st;
  if (out_case_count == nullptr) return fail(EMBER_INVALID_ARGUMENT, std::string(what) + ": out_case_count is NULL");
  return guarded(what, [&]() -> EmberStatus {
    module->bundled_results.clear();
    module->outputs.clear();  // the cases ran the methods: earlier output views are stale
    ember::VerifyOptions options;
    options.rtol = rtol;
    options.atol = atol;
    auto results = module->module.verify_bundled_cases(options);
    if (!results.ok()) return from_status(results.error());
    module->bundled_results = std::move(*results);
    *out_case_count = module->bundled_results.size();
    return EMBER_OK;
  });
}

EmberStatus ember_module_bundled_result(EmberModule* module, size_t index, EmberBundledResult* out_result) {
  const char* what = "ember_module_bundled_result";
  EmberStatus st = check_module(module, "forward", what);
  if (st != EMBER_OK) return st;
  if (out_result == nullptr) return fail(EMBER_INVALID_ARGUMENT, std::string(what) + ": out_result is NULL");
  if (index >= module->bundled_results.size()) {
    return fail(EMBER_INVALID_ARGUMENT, std::string(what) + ": case " + std::to_string(index) + " does not exist (" +
                                            std::to_string(module->bundled_results.size()) +
                                            " results; run ember_module_verify_bundled first)");
  }
  const ember::BundledCaseResult& r = module->bundled_results[index];
  out_result->name = r.name.c_str();
  out_result->method = r.method.c_str();
  out_result->passed = r.passed ? 1 : 0;
  out_result->max_abs_error = r.max_abs_error;
  out_result->rel_l2_error = r.rel_l2_error;
  out_result->message = r.message.c_str();
  return EMBER_OK;
}

}  // extern "C"
