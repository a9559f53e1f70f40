#include "runtime/program/program.h"

#include <cstring>

#include "runtime/program/file_header.h"
#include "runtime/program/program_validator.h"
#include "schema/program_generated.h"

namespace ember {

Result<Program> Program::load(DataLoader* loader, Verification verification, Diagnostic* diag) {
  Result<Program> program = load_file(loader, verification, diag);
  if (!program.ok()) return program;
  // Without data files: a program that needs one says which (external_data.cc, the overload
  // taking ExternalData, links the data file code only into binaries that use it).
  const auto* segments = program->program_->segments();
  for (flatbuffers::uoffset_t i = 0; segments != nullptr && i < segments->size(); ++i) {
    const schema::ExternalData* ext = segments->Get(i)->external();
    if (ext == nullptr) continue;
    const auto* names = program->program_->data_files();
    const flatbuffers::String* name = ext->name() != nullptr ? ext->name() : ext->key();
    return fail(diag, Error::NotFound,
                "this program keeps its weights in a data file (%s; first tensor '%s'): pass it, e.g. `ember run "
                "PROGRAM --data FILE.ptd` or Module(path, {\"FILE.ptd\"})",
                names != nullptr && names->size() > 0 ? names->Get(0)->c_str() : "a .ptd",
                name != nullptr ? name->c_str() : "");
  }
  return program;
}

size_t Program::num_external_segments() const {
  size_t n = 0;
  if (program_->segments() != nullptr) {
    for (const schema::Segment* s : *program_->segments()) n += s->external() != nullptr ? 1 : 0;
  }
  return n;
}

Result<Program> Program::load_file(DataLoader* loader, Verification verification, Diagnostic* diag) {
  if (loader == nullptr) return fail(diag, Error::InvalidArgument, "Program::load: loader is null");
  Result<size_t> file_size = loader->size();
  if (!file_size.ok()) return fail(diag, file_size.error(), "cannot determine the program size");
  if (*file_size < kFileHeaderSize) {
    return fail(diag, Error::InvalidProgram,
                "not an Ember program: %zu bytes is smaller than the %zu-byte header (truncated file?)",
                *file_size, kFileHeaderSize);
  }
  FileHeader header;
  // The header's digest bytes as they are (decoded on demand); scalars, not an array, so no
  // stack protector is added to this function.
  uint64_t digest_lo = 0, digest_hi = 0;
  {
    Result<FreeableBuffer> bytes = load_exactly(loader, 0, kFileHeaderSize, "the program header", diag);
    if (!bytes.ok()) return bytes.error();
    if (!parse_file_header(static_cast<const uint8_t*>(bytes->data()), &header)) {
      return fail(diag, Error::InvalidProgram,
                  std::memcmp(bytes->data(), kPtdMagic, 8) == 0
                      ? "this is an Ember data file (.ptd), not a program: open the .pte and pass the data file "
                        "beside it (--data FILE.ptd, Module(path, {\"FILE.ptd\"}))"
                      : "not an Ember program: bad magic (expected 'EMBERPTE'); export it with `ember export`");
    }
    const uint8_t* raw = static_cast<const uint8_t*>(bytes->data()) + kContentDigestOffset;
    std::memcpy(&digest_lo, raw, 8);
    std::memcpy(&digest_hi, raw + 8, 8);
  }
  EMBER_TRY(check_file_header(header, *file_size, kFormatVersion, "program", diag));
  Program program;
  Result<FreeableBuffer> fb = load_exactly(loader, header.flatbuffer_offset, header.flatbuffer_size,
      "the program body", diag);
  if (!fb.ok()) return fb.error();
  program.program_data_ = std::move(*fb);
  const uint8_t* fb_bytes = static_cast<const uint8_t*>(program.program_data_.data());
  if (!flatbuffers::BufferHasIdentifier(fb_bytes, schema::ProgramIdentifier())) {
    return fail(diag, Error::InvalidProgram,
                "invalid program: wrong FlatBuffer identifier (expected '%s')", schema::ProgramIdentifier());
  }
  if (verification == Verification::Full) {
    if (reinterpret_cast<uintptr_t>(fb_bytes) % 8 != 0) {
      return fail(diag, Error::InvalidProgram, "program bytes must be 8-byte aligned in memory");
    }
    flatbuffers::Verifier verifier(fb_bytes, program.program_data_.size(), 64, 4000000);
    if (!schema::VerifyProgramBuffer(verifier)) {
      return fail(diag, Error::InvalidProgram,
                  "invalid program: the FlatBuffer failed verification (corrupt file)");
    }
  }
  program.program_ = schema::GetProgram(fb_bytes);
  program.content_digest_lo_ = digest_lo;
  program.content_digest_hi_ = digest_hi;
  if (header.segment_area_size != 0) {
    Result<FreeableBuffer> segments = load_exactly(loader, header.segment_area_offset, header.segment_area_size,
        "the program's data segments", diag);
    if (!segments.ok()) return segments.error();
    program.segment_data_ = std::move(*segments);
  }
  if (verification == Verification::Full) {
    EMBER_TRY(validate_program(program.program_, header.segment_area_size, diag));
  }
  return program;
}

Program::Program(Program&&) noexcept = default;

size_t Program::num_methods() const {
  return program_->methods() ? program_->methods()->size() : 0;
}

Result<const char*> Program::method_name(size_t index) const {
  if (index >= num_methods()) return Error::NotFound;
  const auto* method = program_->methods()->Get(static_cast<flatbuffers::uoffset_t>(index));
  return method->name() ? method->name()->c_str() : "";
}

const schema::Method* Program::find_method(const char* name) const {
  if (name == nullptr || program_->methods() == nullptr) return nullptr;
  const size_t len = std::strlen(name);
  for (const schema::Method* method : *program_->methods()) {
    // Compare as a length + bytes (GCC 12 -Wstringop-overread misreads strcmp on c_str()).
    const flatbuffers::String* n = method->name();
    if (n != nullptr && n->size() == len && std::memcmp(n->data(), name, len) == 0) return method;
  }
  return nullptr;
}

Result<MethodMeta> Program::method_meta(const char* name) const {
  const schema::Method* method = find_method(name);
  if (method == nullptr) return Error::NotFound;
  return MethodMeta(method);
}

size_t Program::num_metadata() const {
  return program_->metadata() == nullptr ? 0 : program_->metadata()->size();
}

Result<const char*> Program::metadata_key(size_t index) const {
  if (index >= num_metadata() || program_->metadata()->Get(index)->key() == nullptr) return Error::NotFound;
  return program_->metadata()->Get(index)->key()->c_str();
}

Result<const char*> Program::metadata_value(size_t index) const {
  if (index >= num_metadata() || program_->metadata()->Get(index)->value() == nullptr) return Error::NotFound;
  return program_->metadata()->Get(index)->value()->c_str();
}

Result<const char*> Program::metadata(const char* key) const {
  if (key == nullptr) return Error::InvalidArgument;
  const size_t len = std::strlen(key);
  for (size_t i = 0; i < num_metadata(); ++i) {
    const schema::MetadataEntry* e = program_->metadata()->Get(i);
    if (e->key() != nullptr && e->value() != nullptr && e->key()->size() == len &&
        std::memcmp(e->key()->data(), key, len) == 0) {
      return e->value()->c_str();
    }
  }
  return Error::NotFound;
}

Result<Span<const uint8_t>> Program::segment(uint32_t index) const {
  if (program_->segments() == nullptr || index >= program_->segments()->size()) {
    return Error::InvalidProgram;
  }
  const schema::Segment* s = program_->segments()->Get(index);
  if (s->external() != nullptr) {
    // Resolved and checked at load (external_data.cc); null without data files.
    if (external_segment_ == nullptr) return Error::InvalidProgram;
    return external_segment_(*this, index);
  }
  if (s->offset() > segment_data_.size() || s->size() > segment_data_.size() - s->offset()) {
    return Error::InvalidProgram;
  }
  return Span<const uint8_t>(static_cast<const uint8_t*>(segment_data_.data()) + s->offset(),
                             s->size());
}

}  // namespace ember
