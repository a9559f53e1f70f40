// Emits a .pte program (schema/program.fbs + docs/pte-format.md): the 64-byte header, the
// FlatBuffer, then 64-byte aligned data segments (one per constant / initial state value,
// one per delegate blob).
//
// Value encoding of non-tensor arguments: Int/Double/Bool/String as such; a ScalarType
// argument is an Int holding Ember's ScalarType value (runtime/core/scalar_type.h, e.g.
// Float32 = 0, Int64 = 7); MemoryFormat / Layout are Ints with torch.export's codes
// (memory format: 1 contiguous, 2 channels_last, 4 preserve; layout 7 strided); a Device
// argument is None. Symbolic ints are Int values written by their kernels; an IntList entry
// that is symbolic carries the Int's index in value_refs (items hold the upper bound).
// A Tensor[] result (split, unbind, chunk, ...) is one output tensor per element, appended
// after the schema arguments; kernels derive the count from num_args.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "exporter/emit/data_file_writer.h"
#include "exporter/ir/graph.h"
#include "exporter/memory/memory_planner.h"
#include "exporter/partition/partitioner.h"
#include "exporter/util/npy.h"

namespace ember {
namespace exporter {

// A test case to embed in the program (`ember export --bundle`): the method's inputs and
// its expected outputs, in order.
struct BundledCaseData {
  std::string name;
  std::vector<NpyArray> inputs;
  std::vector<NpyArray> expected_outputs;
  std::string method;  // empty: the program's first method
};

// Program-level key/value strings (`ember export --metadata key=value`), in the order given.
// Keys are unique and non-empty (check_program_metadata says why one is not).
using ProgramMetadata = std::vector<std::pair<std::string, std::string>>;
absl::Status check_program_metadata(const ProgramMetadata& metadata);

struct EmitStats {
  size_t num_values = 0;
  size_t num_instructions = 0;
  size_t num_segments = 0;
  size_t constant_bytes = 0;
  size_t file_bytes = 0;
  // Constants, state initialisers and blobs stored once for several uses: segments whose bytes
  // equal an earlier one's (in the same method or another) refer to it.
  size_t deduplicated_segments = 0;
  size_t deduplicated_bytes = 0;
  // Constants kept in the data file (EmitOptions::external_weights) instead of the program.
  size_t external_segments = 0;
  size_t external_bytes = 0;
};

// Where constants go. With `external_weights` set, every constant tensor (and every constant a
// delegate reads) is stored in that data file and the program refers to it by key; state
// initialisers and delegate blobs stay in the program.
struct EmitOptions {
  DataFileWriter* external_weights = nullptr;  // not owned; null: constants inside the program
  std::string data_file_name;                  // recorded as a hint for error messages (a base name)
};

// One method of a program: its final graph, memory plan and delegate calls (not owned; they
// outlive emit_program).
struct MethodToEmit {
  std::string name;
  const Graph* graph = nullptr;
  const MemoryPlan* plan = nullptr;
  const std::vector<DelegateRecord>* delegates = nullptr;
};

// A program of several methods, in the order given (names unique), over one segment area in
// which identical bytes are stored once. Bundled cases name their method (empty: the first).
absl::StatusOr<std::vector<uint8_t>> emit_program(const std::vector<MethodToEmit>& methods, EmitStats* stats,
                                                  const std::vector<BundledCaseData>& bundled_cases = {},
                                                  const ProgramMetadata& metadata = {},
                                                  const EmitOptions& options = {});

// `g` must be final (finalize_outputs applied, compacted), `plan` from plan_memory(g).
absl::StatusOr<std::vector<uint8_t>> emit_pte(const Graph& g, const MemoryPlan& plan,
                                              const std::vector<DelegateRecord>& delegates,
                                              const std::string& method_name, EmitStats* stats,
                                              const std::vector<BundledCaseData>& bundled_cases = {},
                                              const ProgramMetadata& metadata = {}, const EmitOptions& options = {});

}  // namespace exporter
}  // namespace ember
