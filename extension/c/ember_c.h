/* Ember C API: run a .pte program from C (or any language with a C FFI).
 *
 *   EmberModule* m = NULL;
 *   if (ember_module_open("model.pte", &m) != EMBER_OK) { puts(ember_last_error()); return 1; }
 *   int64_t sizes[4] = {1, 3, 224, 224};
 *   ember_module_set_input(m, "forward", 0, EMBER_FLOAT32, sizes, 4, pixels, sizeof(pixels));
 *   ember_module_execute(m, "forward");
 *   EmberTensorView out;
 *   ember_module_output(m, "forward", 0, &out);      (out.data: out.nbytes bytes)
 *   ember_module_close(m);
 *
 * Errors are values: every call returns EMBER_OK or the runtime's error code, and
 * ember_last_error() returns the calling thread's message for its last failed call (what
 * went wrong and what to do). No C++ exception crosses this interface.
 * Memory: input data is bound without copying and stays bound (later executes read it
 * again) until the next set_input of that index: keep it valid while executes use it. An
 * output view is valid until the next execute of that method, set_num_threads or close.
 * Strings and arrays the API returns (method names, sizes, backend names, bundled results) are
 * owned by the module and valid until ember_module_close, unless a call says otherwise.
 * Thread-safety: one EmberModule per thread (as for ember::Module).
 * Linking: the kernels and delegates register at load time; link libember.so, or the
 * static libraries whole-archive (EmberConfig.cmake / ember-static.pc do that). */
#ifndef EMBER_C_H_
#define EMBER_C_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Status codes: the values of ember::Error (runtime/core/error.h). */
typedef enum EmberStatus {
  EMBER_OK = 0,
  EMBER_INVALID_ARGUMENT = 1,
  EMBER_INVALID_PROGRAM = 2,
  EMBER_VERSION_MISMATCH = 3,
  EMBER_NOT_FOUND = 4,
  EMBER_NOT_SUPPORTED = 5,
  EMBER_OUT_OF_MEMORY = 6,
  EMBER_OUT_OF_BOUNDS = 7,
  EMBER_ACCESS_FAILED = 8,
  EMBER_INVALID_STATE = 9,
  EMBER_BACKEND_FAILED = 10,
  EMBER_INTERNAL = 11,
  EMBER_STATUS_MAX_ENUM = 0x7fffffff, /* keeps the enum 32-bit wide; not a status */
} EmberStatus;

/* Element types: the values of ember::ScalarType (runtime/core/scalar_type.h). */
typedef enum EmberDtype {
  EMBER_FLOAT32 = 0,
  EMBER_FLOAT16 = 1,
  EMBER_BFLOAT16 = 2,
  EMBER_FLOAT64 = 3,
  EMBER_INT8 = 4,
  EMBER_INT16 = 5,
  EMBER_INT32 = 6,
  EMBER_INT64 = 7,
  EMBER_UINT8 = 8,
  EMBER_BOOL = 9,
  /* Not a dtype: makes every non-negative int a valid EmberDtype value in C++ too, so a
   * caller's out-of-range value is rejected with a message rather than being undefined. */
  EMBER_DTYPE_MAX_ENUM = 0x7fffffff,
} EmberDtype;

/* Largest tensor rank the C API accepts for inputs. */
#define EMBER_MAX_RANK 16

typedef struct EmberModule EmberModule;

/* What an input or output of a method is: the values of ember::ValueTag's kinds the C API
 * reads and writes (lists and strings are EMBER_VALUE_OTHER). */
typedef enum EmberValueKind {
  EMBER_VALUE_TENSOR = 0,
  EMBER_VALUE_INT = 1,
  EMBER_VALUE_DOUBLE = 2,
  EMBER_VALUE_BOOL = 3,
  EMBER_VALUE_NONE = 4,
  EMBER_VALUE_OTHER = 5,
  EMBER_VALUE_KIND_MAX_ENUM = 0x7fffffff, /* keeps the enum 32-bit wide; not a kind */
} EmberValueKind;

/* An input or output as the program declares it (no method is loaded to read it). */
typedef struct EmberValueInfo {
  EmberValueKind kind;
  EmberDtype dtype;          /* tensors only */
  size_t rank;               /* tensors only */
  const int64_t* max_sizes;  /* [rank]: the sizes, or their upper bounds when `dynamic` */
  int dynamic;               /* 1: a dynamic-shape tensor (bind any sizes within max_sizes) */
  size_t nbytes;             /* tensors: bytes at max_sizes */
} EmberValueInfo;

/* A scalar input or output: `i` for EMBER_VALUE_INT and EMBER_VALUE_BOOL (0 / 1), `d` for
 * EMBER_VALUE_DOUBLE; EMBER_VALUE_NONE carries nothing. */
typedef struct EmberScalar {
  EmberValueKind kind;
  int64_t i;
  double d;
} EmberScalar;

/* One bundled test case's outcome (ember_module_verify_bundled); strings valid until the next
 * verify or close. */
typedef struct EmberBundledResult {
  const char* name;
  const char* method;
  int passed;
  double max_abs_error;  /* over every element of every output */
  double rel_l2_error;   /* the largest over the outputs */
  const char* message;   /* why it failed ("" when it passed) */
} EmberBundledResult;

/* A read-only view of an output tensor (contiguous, row-major). */
typedef struct EmberTensorView {
  EmberDtype dtype;
  size_t rank;
  const int64_t* sizes; /* [rank] */
  const void* data;     /* nbytes bytes */
  size_t nbytes;
} EmberTensorView;

/* The calling thread's message for its last failed call ("" when none). Valid until the
 * thread's next failed call. */
const char* ember_last_error(void);

/* "0.1.0": the library's version (runtime/version.h; as in EmberConfigVersion.cmake and ember.pc). */
const char* ember_version(void);

/* Opens and verifies the program at `path` (memory-mapped). *out_module is NULL on failure. */
EmberStatus ember_module_open(const char* path, EmberModule** out_module);

/* Opens a program exported with `ember export --external-weights W.ptd`, whose weights are in
 * data files: data_paths[0, num_data_paths) are searched in that order for each tensor (as
 * `ember run --data`, repeated). Each data file is opened (memory-mapped, every tensor checked
 * against its recorded digest) once per process and shared by every module naming it; it must
 * stay in place, unchanged, while a module using it is open. Such a program opened with
 * ember_module_open fails with EMBER_NOT_FOUND naming its data file; a data file it was not
 * exported against fails to open (EMBER_NOT_FOUND or EMBER_INVALID_PROGRAM, naming the tensor).
 * num_data_paths must be at least 1 (a program without data files: ember_module_open). A
 * program without external weights opens as with ember_module_open, its data files still
 * opened and checked. *out_module is NULL on failure. */
EmberStatus ember_module_open_with_data(const char* path, const char* const* data_paths, size_t num_data_paths,
                                        EmberModule** out_module);

/* Flags for ember_module_open_with_flags (OR them together). */
typedef enum EmberOpenFlags {
  EMBER_OPEN_DEFAULT = 0,
  /* Accept data file tensors whose bytes differ from those the program was exported with (same
   * names, dtypes and shapes): weights updated without re-exporting the program (as
   * `ember run --allow-updated-weights`). */
  EMBER_OPEN_ALLOW_UPDATED_WEIGHTS = 1,
  EMBER_OPEN_FLAGS_MAX_ENUM = 0x7fffffff, /* keeps the enum 32-bit wide; not a flag */
} EmberOpenFlags;

/* ember_module_open_with_data with `flags` (EmberOpenFlags values OR-ed together; an unknown
 * bit is EMBER_INVALID_ARGUMENT). */
EmberStatus ember_module_open_with_flags(const char* path, const char* const* data_paths, size_t num_data_paths,
                                         uint32_t flags, EmberModule** out_module);
/* Frees the module and everything it loaded; NULL is ignored. */
void ember_module_close(EmberModule* module);

/* The program's methods: their count and the name of each (index < count). */
EmberStatus ember_module_method_count(EmberModule* module, size_t* out_count);
EmberStatus ember_module_method_name(EmberModule* module, size_t index, const char** out_name);

/* Input / output `index` of `method` as the program declares it. */
EmberStatus ember_module_input_info(EmberModule* module, const char* method, size_t index,
                                    EmberValueInfo* out_info);
EmberStatus ember_module_output_info(EmberModule* module, const char* method, size_t index,
                                     EmberValueInfo* out_info);

/* The delegate calls of `method` (subgraphs lowered to a backend) and each one's backend
 * id ("xnnpack", "vulkan", "qnn"). */
EmberStatus ember_module_num_delegates(EmberModule* module, const char* method, size_t* out_count);
EmberStatus ember_module_delegate_backend(EmberModule* module, const char* method, size_t index,
                                          const char** out_backend);

/* Bytes of the memory-planned arenas `method` needs (activations; weights are mapped). */
EmberStatus ember_module_planned_bytes(EmberModule* module, const char* method, size_t* out_bytes);

/* Threads for kernels and delegates (default 1). Call before the first execute. */
EmberStatus ember_module_set_num_threads(EmberModule* module, size_t threads);

/* Loads `method` (e.g. "forward"): memory, kernels, delegates. Done by the calls below when
 * needed; call it to pay the cost up front or to check that a program loads. */
EmberStatus ember_module_load_method(EmberModule* module, const char* method);
EmberStatus ember_module_num_inputs(EmberModule* module, const char* method, size_t* out_count);
EmberStatus ember_module_num_outputs(EmberModule* module, const char* method, size_t* out_count);

/* Binds input `index` of `method` to caller memory (no copy): a tensor of `dtype` and
 * `sizes[rank]` whose contiguous bytes are data[0, nbytes). nbytes must equal the tensor's
 * size. `data` is written only if the program mutates that input in place. */
EmberStatus ember_module_set_input(EmberModule* module, const char* method, size_t index,
                                   EmberDtype dtype, const int64_t* sizes, size_t rank,
                                   void* data, size_t nbytes);

/* Binds input `index` of `method` to a scalar (an int, double or bool input). */
EmberStatus ember_module_set_input_scalar(EmberModule* module, const char* method, size_t index,
                                          const EmberScalar* value);

/* Runs `method` with the inputs bound by ember_module_set_input. */
EmberStatus ember_module_execute(EmberModule* module, const char* method);

/* A view of output `index` of the last successful execute of `method`. */
EmberStatus ember_module_output(EmberModule* module, const char* method, size_t index,
                                EmberTensorView* out_view);

/* Output `index` of the last successful execute of `method` when it is a scalar (an int,
 * double, bool or None output); a tensor output is read with ember_module_output. */
EmberStatus ember_module_output_scalar(EmberModule* module, const char* method, size_t index,
                                       EmberScalar* out_value);

/* Restores `method`'s mutable state (e.g. a KV cache) to its initial value. */
EmberStatus ember_module_reset_state(EmberModule* module, const char* method);

/* Runs every test case bundled in the program (`ember export --bundle`), each from the
 * method's initial state, and keeps the results for ember_module_bundled_result. Tolerances:
 * rtol / atol < 0 take the per-dtype defaults of `ember verify` (float32: rtol 1e-4, atol
 * 1e-5 on max |error| and RMS error, scaled by the output; integers exact). A failing case
 * is a result (passed = 0), not an error; a program without cases is EMBER_NOT_FOUND. */
EmberStatus ember_module_verify_bundled(EmberModule* module, double rtol, double atol, size_t* out_case_count);
EmberStatus ember_module_bundled_result(EmberModule* module, size_t index, EmberBundledResult* out_result);

#ifdef __cplusplus
}
#endif

#endif /* EMBER_C_H_ */
