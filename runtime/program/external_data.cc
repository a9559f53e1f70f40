// Program's external segments: resolved against the data files at load (program.h,
// ExternalData), so a missing or mismatched tensor fails the load with its name instead of
// surfacing as wrong numbers later.
#include <cstdio>
#include <cstring>

#include "runtime/program/program.h"
#include "schema/program_generated.h"

namespace ember {
namespace {

// "float32 [64, 3, 3, 3]" into `out` (truncated to `cap`); no heap.
void describe(ScalarType dtype, const int64_t* sizes, size_t rank, char* out, size_t cap) {
  int n = std::snprintf(out, cap, "%s [", scalar_type_name(dtype));
  for (size_t d = 0; d < rank && n > 0 && static_cast<size_t>(n) < cap; ++d) {
    n += std::snprintf(out + n, cap - static_cast<size_t>(n), d == 0 ? "%lld" : ", %lld",
                       static_cast<long long>(sizes[d]));
  }
  if (n > 0 && static_cast<size_t>(n) < cap) std::snprintf(out + n, cap - static_cast<size_t>(n), "]");
}

bool same_sizes(const flatbuffers::Vector<int64_t>* want, Span<const int64_t> got) {
  const size_t rank = want == nullptr ? 0 : want->size();
  if (rank != got.size()) return false;
  for (size_t d = 0; d < rank; ++d) {
    if (want->Get(static_cast<flatbuffers::uoffset_t>(d)) != got[d]) return false;
  }
  return true;
}

}  // namespace

Result<Program> Program::load(DataLoader* loader, Verification verification, Diagnostic* diag,
                              const ExternalData& data) {
  Result<Program> program = load_file(loader, verification, diag);
  if (!program.ok()) return program;
  EMBER_TRY(program->bind_external_data(data, diag));
  return program;
}

Result<DataEntryView> Program::find_data_entry(const char* key, size_t key_size) const {
  for (size_t f = 0; f < num_data_files_; ++f) {
    Result<DataEntryView> e = data_files_[f]->find(key, key_size);
    if (e.ok()) return e;
  }
  return Error::NotFound;
}

// Program::segment() of an external segment: its entry's bytes (found and checked at load).
Result<Span<const uint8_t>> Program::external_segment_bytes(const Program& program, uint32_t index) {
  const schema::Segment* s = program.program_->segments()->Get(index);
  const flatbuffers::String* key = s->external()->key();
  Result<DataEntryView> e = program.find_data_entry(key->data(), key->size());
  if (!e.ok() || e->bytes.size() != s->size()) return Error::InvalidProgram;
  return e->bytes;
}

Error Program::bind_external_data(const ExternalData& data, Diagnostic* diag) {
  if (data.files.size() > kMaxDataFiles) {
    return fail(diag, Error::InvalidArgument, "%zu data files given; a program reads at most %zu", data.files.size(),
                kMaxDataFiles);
  }
  for (size_t f = 0; f < data.files.size(); ++f) {
    if (data.files[f] == nullptr) return fail(diag, Error::InvalidArgument, "data file %zu is null", f);
    data_files_[f] = data.files[f];
  }
  num_data_files_ = data.files.size();
  external_segment_ = &Program::external_segment_bytes;
  const auto* segments = program_->segments();
  if (segments == nullptr) return Error::Ok;
  // The file name the exporter wrote, for messages ("its data file" when it recorded none).
  const char* hint = "its data file";
  if (program_->data_files() != nullptr && program_->data_files()->size() > 0 &&
      program_->data_files()->Get(0) != nullptr) {
    hint = program_->data_files()->Get(0)->c_str();
  }
  for (flatbuffers::uoffset_t i = 0; i < segments->size(); ++i) {
    const schema::ExternalData* ext = segments->Get(i)->external();
    if (ext == nullptr) continue;
    if (ext->key() == nullptr || ext->key()->size() == 0) {
      return fail(diag, Error::InvalidProgram, "invalid program: external segment %u has no key; re-export", i);
    }
    const char* key = ext->key()->c_str();
    const char* name = ext->name() != nullptr && ext->name()->size() > 0 ? ext->name()->c_str() : key;
    if (num_data_files_ == 0) {
      return fail(diag, Error::NotFound,
                  "this program keeps its weights in a data file (%s; first tensor '%s'): pass it, e.g. "
                  "`ember run PROGRAM --data FILE.ptd` or Module(path, {\"FILE.ptd\"})",
                  hint, name);
    }
    Result<DataEntryView> entry = find_data_entry(key, ext->key()->size());
    if (!entry.ok()) {
      return fail(diag, Error::NotFound,
                  "tensor '%s' (key '%s') is in none of the %zu data file(s) given: the program was exported "
                  "against another one (%s); pass that file or re-export",
                  name, key, num_data_files_, hint);
    }
    const ScalarType want_dtype = static_cast<ScalarType>(ext->dtype());
    const Span<const int64_t> got_sizes = entry->sizes;
    if (entry->dtype != want_dtype || !same_sizes(ext->sizes(), got_sizes) ||
        entry->bytes.size() != segments->Get(i)->size()) {
      char want[128], got[128];
      describe(want_dtype, ext->sizes() ? ext->sizes()->data() : nullptr, ext->sizes() ? ext->sizes()->size() : 0,
               want, sizeof(want));
      describe(entry->dtype, got_sizes.data(), got_sizes.size(), got, sizeof(got));
      return fail(diag, Error::InvalidProgram,
                  "tensor '%s' in the data file is %s, but the program expects %s: the file belongs to another "
                  "export; pass the one the program was exported with (%s) or re-export",
                  name, got, want, hint);
    }
    if (!data.allow_updated_weights && (entry->digest.lo != ext->digest_lo() || entry->digest.hi != ext->digest_hi())) {
      return fail(diag, Error::InvalidProgram,
                  "tensor '%s' in the data file differs from the one the program was exported with (content "
                  "hash mismatch): pass the matching data file (%s) or re-export; if the weights were updated "
                  "on purpose, allow it (--allow-updated-weights, ExternalData::allow_updated_weights)",
                  name, hint);
    }
  }
  return Error::Ok;
}

}  // namespace ember
