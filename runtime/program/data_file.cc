#include "runtime/program/data_file.h"

#include <cstring>

#include "runtime/core/tensor.h"
#include "runtime/program/file_header.h"
#include "schema/data_file_generated.h"

namespace ember {
namespace {

using flatbuffers::uoffset_t;

// a + b <= limit, without overflow.
bool fits(uint64_t offset, uint64_t size, uint64_t limit) { return offset <= limit && size <= limit - offset; }

// Bytewise order of two keys (memcmp, then length): the order the writer sorts by.
int compare_keys(const char* a, size_t a_size, const char* b, size_t b_size) {
  const int c = std::memcmp(a, b, a_size < b_size ? a_size : b_size);
  if (c != 0) return c;
  return a_size < b_size ? -1 : (a_size > b_size ? 1 : 0);
}

// Checks entry `i`: dtype, sizes (rank, non-negative, bytes = numel x element size), bounds and
// alignment inside the segment area, and that its key sorts after entry i-1's.
Error check_entry(const schema::DataFile* file, uoffset_t i, size_t area_size, Diagnostic* diag) {
  const schema::DataEntry* e = file->entries()->Get(i);
  const char* key = e->key()->c_str();
  const int dtype = static_cast<int>(e->dtype());
  if (!is_valid_scalar_type(dtype)) {
    return fail(diag, Error::InvalidProgram, "invalid data file: entry '%s' has unknown dtype %d", key, dtype);
  }
  const auto* sizes = e->sizes();
  const size_t rank = sizes == nullptr ? 0 : sizes->size();
  if (rank > static_cast<size_t>(kMaxRank)) {
    return fail(diag, Error::InvalidProgram, "invalid data file: entry '%s' has rank %zu (at most %d)", key, rank,
                kMaxRank);
  }
  if (rank != 0 && reinterpret_cast<uintptr_t>(sizes->data()) % alignof(int64_t) != 0) {
    return fail(diag, Error::InvalidProgram, "invalid data file: entry '%s' has a misaligned sizes vector", key);
  }
  // numel x element size stays below 2^62, so the byte count below cannot wrap (bounding numel
  // alone let 2^61 float64 elements "need" 2^64 = 0 bytes and match an empty entry).
  const uint64_t esize = element_size(static_cast<ScalarType>(dtype));
  const uint64_t max_numel = (uint64_t{1} << 62) / esize;
  uint64_t numel = 1;
  for (uoffset_t d = 0; d < rank; ++d) {
    const int64_t n = sizes->Get(d);
    if (n < 0 || (n != 0 && numel > max_numel / static_cast<uint64_t>(n))) {
      return fail(diag, Error::InvalidProgram, "invalid data file: entry '%s' has a bad size %lld in dim %u", key,
                  static_cast<long long>(n), d);
    }
    numel *= static_cast<uint64_t>(n);
  }
  const uint64_t want = numel * esize;
  if (e->size() != want) {
    return fail(diag, Error::InvalidProgram,
                "invalid data file: entry '%s' holds %llu bytes, but its dtype and sizes need %llu", key,
                static_cast<unsigned long long>(e->size()), static_cast<unsigned long long>(want));
  }
  if (e->offset() % kSegmentAlignment != 0 || !fits(e->offset(), e->size(), area_size)) {
    return fail(diag, Error::InvalidProgram,
                "invalid data file: entry '%s' is misaligned or lies outside the file (truncated?)", key);
  }
  if (i > 0) {
    const flatbuffers::String* prev = file->entries()->Get(i - 1)->key();
    if (compare_keys(prev->data(), prev->size(), e->key()->data(), e->key()->size()) >= 0) {
      return fail(diag, Error::InvalidProgram,
                  "invalid data file: keys are not sorted and unique ('%s' follows '%s'); rewrite it with "
                  "ember export --external-weights",
                  key, prev->c_str());
    }
  }
  return Error::Ok;
}

}  // namespace

Result<DataFile> DataFile::load(DataLoader* loader, Verification verification, Diagnostic* diag) {
  if (loader == nullptr) return fail(diag, Error::InvalidArgument, "DataFile::load: loader is null");
  Result<size_t> file_size = loader->size();
  if (!file_size.ok()) return fail(diag, file_size.error(), "cannot determine the data file's size");
  if (*file_size < kFileHeaderSize) {
    return fail(diag, Error::InvalidProgram,
                "not an Ember data file: %zu bytes is smaller than the %zu-byte header (truncated file?)", *file_size,
                kFileHeaderSize);
  }
  FileHeader header;
  DataFile out;
  {
    Result<FreeableBuffer> bytes = load_exactly(loader, 0, kFileHeaderSize, "the data file's header", diag);
    if (!bytes.ok()) return bytes.error();
    const uint8_t* raw = static_cast<const uint8_t*>(bytes->data());
    if (!parse_file_header(raw, &header, kPtdMagic)) {
      return fail(diag, Error::InvalidProgram,
                  std::memcmp(raw, kPteMagic, 8) == 0
                      ? "this is an Ember program (.pte), not a data file (.ptd); pass the .ptd written by "
                        "ember export --external-weights"
                      : "not an Ember data file: bad magic (expected 'EMBERPTD'); pass the .ptd written by "
                        "ember export --external-weights");
    }
    out.content_digest_ = read_content_digest(raw);
  }
  EMBER_TRY(check_file_header(header, *file_size, kDataFileFormatVersion, "data file", diag));
  Result<FreeableBuffer> fb = load_exactly(loader, header.flatbuffer_offset, header.flatbuffer_size,
      "the data file's index", diag);
  if (!fb.ok()) return fb.error();
  out.flatbuffer_data_ = std::move(*fb);
  const uint8_t* fb_bytes = static_cast<const uint8_t*>(out.flatbuffer_data_.data());
  if (!flatbuffers::BufferHasIdentifier(fb_bytes, schema::DataFileIdentifier())) {
    return fail(diag, Error::InvalidProgram, "invalid data file: wrong FlatBuffer identifier (expected '%s')",
                schema::DataFileIdentifier());
  }
  if (verification != Verification::Minimal) {
    if (reinterpret_cast<uintptr_t>(fb_bytes) % 8 != 0) {
      return fail(diag, Error::InvalidProgram, "data file bytes must be 8-byte aligned in memory");
    }
    flatbuffers::Verifier verifier(fb_bytes, out.flatbuffer_data_.size(), 64, 4000000);
    if (!schema::VerifyDataFileBuffer(verifier)) {
      return fail(diag, Error::InvalidProgram, "invalid data file: the FlatBuffer failed verification (corrupt file)");
    }
  }
  out.file_ = schema::GetDataFile(fb_bytes);
  if (header.segment_area_size != 0) {
    Result<FreeableBuffer> segments = load_exactly(loader, header.segment_area_offset, header.segment_area_size,
        "the data file's tensors", diag);
    if (!segments.ok()) return segments.error();
    out.segment_data_ = std::move(*segments);
  }
  if (verification == Verification::Minimal) return out;
  const uoffset_t n = out.file_->entries() == nullptr ? 0 : out.file_->entries()->size();
  for (uoffset_t i = 0; i < n; ++i) EMBER_TRY(check_entry(out.file_, i, header.segment_area_size, diag));
  if (verification == Verification::Full) {
    for (uoffset_t i = 0; i < n; ++i) {
      Result<DataEntryView> e = out.entry(i);
      if (!e.ok()) return e.error();
      if (ember::content_digest(e->bytes.data(), e->bytes.size()) != e->digest) {
        return fail(diag, Error::InvalidProgram,
                    "data file entry '%s' does not match its recorded content hash: the file was changed or "
                    "damaged after it was written; restore it or re-export",
                    e->key);
      }
    }
  }
  return out;
}

DataFile::DataFile(DataFile&&) noexcept = default;
DataFile& DataFile::operator=(DataFile&&) noexcept = default;
DataFile::~DataFile() = default;

size_t DataFile::num_entries() const { return file_->entries() == nullptr ? 0 : file_->entries()->size(); }

Result<DataEntryView> DataFile::entry(size_t index) const {
  if (index >= num_entries()) return Error::NotFound;
  const schema::DataEntry* e = file_->entries()->Get(static_cast<uoffset_t>(index));
  // Minimal loads skip check_entry: bound the bytes here so a bad offset is an error, not a read.
  if (!fits(e->offset(), e->size(), segment_data_.size())) return Error::InvalidProgram;
  DataEntryView v;
  v.key = e->key()->c_str();
  v.dtype = static_cast<ScalarType>(e->dtype());
  if (e->sizes() != nullptr) v.sizes = Span<const int64_t>(e->sizes()->data(), e->sizes()->size());
  v.bytes = Span<const uint8_t>(static_cast<const uint8_t*>(segment_data_.data()) + e->offset(), e->size());
  v.digest.lo = e->digest_lo();
  v.digest.hi = e->digest_hi();
  return v;
}

Result<DataEntryView> DataFile::find(const char* key, size_t key_size) const {
  size_t lo = 0, hi = num_entries();
  while (lo < hi) {
    const size_t mid = lo + (hi - lo) / 2;
    const flatbuffers::String* k = file_->entries()->Get(static_cast<uoffset_t>(mid))->key();
    const int c = compare_keys(k->data(), k->size(), key, key_size);
    if (c == 0) return entry(mid);
    if (c < 0) lo = mid + 1; else hi = mid;
  }
  return Error::NotFound;
}

}  // namespace ember
