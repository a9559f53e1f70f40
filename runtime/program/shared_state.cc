// Program's shared state (program.h): mutable buffers several methods use, provided and
// initialised once by the caller.
#include <cstring>

#include "runtime/program/program.h"
#include "schema/program_generated.h"

namespace ember {

size_t Program::num_shared_state() const {
  return program_->shared_state() == nullptr ? 0 : program_->shared_state()->size();
}

Result<const char*> Program::shared_state_name(size_t index) const {
  if (index >= num_shared_state()) return Error::NotFound;
  const flatbuffers::String* name = program_->shared_state()->Get(static_cast<flatbuffers::uoffset_t>(index))->name();
  return name == nullptr ? "" : name->c_str();
}

Result<size_t> Program::shared_state_nbytes(size_t index) const {
  if (index >= num_shared_state()) return Error::NotFound;
  return static_cast<size_t>(program_->shared_state()->Get(static_cast<flatbuffers::uoffset_t>(index))->nbytes());
}

Error Program::init_shared_state(size_t index, Span<uint8_t> buffer) const {
  if (index >= num_shared_state()) return Error::NotFound;
  const schema::SharedState* s = program_->shared_state()->Get(static_cast<flatbuffers::uoffset_t>(index));
  if (buffer.size() < s->nbytes()) return Error::InvalidArgument;
  Result<Span<const uint8_t>> init = segment(s->segment_index());
  if (!init.ok() || init->size() < s->nbytes()) return Error::InvalidProgram;
  if (s->nbytes() > 0) std::memcpy(buffer.data(), init->data(), static_cast<size_t>(s->nbytes()));
  return Error::Ok;
}

}  // namespace ember
