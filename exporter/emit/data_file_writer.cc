#include "exporter/emit/data_file_writer.h"

#include <cstring>
#include <fstream>
#include <iterator>

#include "exporter/emit/file_layout.h"
#include "flatbuffers/flatbuffers.h"
#include "runtime/loader/buffer_data_loader.h"
#include "runtime/program/data_file.h"
#include "runtime/program/file_header.h"
#include "schema/data_file_generated.h"

namespace ember {
namespace exporter {
namespace {

namespace fb = ::flatbuffers;
namespace sc = ::ember::schema;

}  // namespace

absl::StatusOr<DataFileWriter> DataFileWriter::from_bytes(const uint8_t* data, size_t size) {
  // The runtime's own loader checks it: an append never builds on a file the runtime refuses.
  BufferDataLoader loader(data, size);
  Diagnostic diag;
  Result<DataFile> file = DataFile::load(&loader, DataFile::Verification::Full, &diag);
  if (!file.ok()) return absl::InvalidArgumentError(diag.message[0] ? diag.message : "not a valid data file");
  DataFileWriter w;
  for (size_t i = 0; i < file->num_entries(); ++i) {
    Result<DataEntryView> e = file->entry(i);
    if (!e.ok()) return absl::InvalidArgumentError("data file entry " + std::to_string(i) + " is unreadable");
    Entry entry;
    entry.dtype = e->dtype;
    entry.sizes.assign(e->sizes.begin(), e->sizes.end());
    entry.bytes.assign(e->bytes.begin(), e->bytes.end());
    entry.digest = e->digest;
    w.by_digest_.emplace(entry.digest.lo, e->key);
    w.entries_.emplace(e->key, std::move(entry));
  }
  w.stats_.existing_entries = w.entries_.size();
  return w;
}

absl::StatusOr<DataFileWriter> DataFileWriter::open_for_append(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return DataFileWriter();  // a new file
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // Copied to 8-byte aligned memory: the loader reads the index in place.
  std::vector<uint64_t> aligned((bytes.size() + 7) / 8);
  if (!bytes.empty()) std::memcpy(aligned.data(), bytes.data(), bytes.size());
  auto w = from_bytes(reinterpret_cast<const uint8_t*>(aligned.data()), bytes.size());
  if (!w.ok()) {
    return absl::InvalidArgumentError("'" + path + "' exists but cannot be appended to: " +
                                      std::string(w.status().message()) +
                                      "; name a new file or remove it (programs exported against it need it)");
  }
  return w;
}

DataFileRef DataFileWriter::add(const std::string& name, ScalarType dtype, const std::vector<int64_t>& sizes,
                                const std::vector<uint8_t>& bytes) {
  const ContentDigest digest = content_digest(bytes.data(), bytes.size());
  auto same = [&](const Entry& e) {
    return e.digest == digest && e.dtype == dtype && e.sizes == sizes && e.bytes == bytes;
  };
  for (auto [it, end] = by_digest_.equal_range(digest.lo); it != end; ++it) {
    if (same(entries_.at(it->second))) {
      ++stats_.reused_entries;
      return DataFileRef{it->second, digest};
    }
  }
  const std::string base = name.empty() ? "constant" : name;
  std::string key = base;
  if (entries_.count(key) != 0) {
    char hex[33];
    digest_hex(digest, hex);
    key = base + "~" + std::string(hex, 12);
    // Same name and the same 48-bit prefix but other bytes: extend until unique.
    for (int n = 2; entries_.count(key) != 0; ++n) key = base + "~" + std::string(hex, 12) + "." + std::to_string(n);
  }
  Entry e;
  e.dtype = dtype;
  e.sizes = sizes;
  e.bytes = bytes;
  e.digest = digest;
  entries_.emplace(key, std::move(e));
  by_digest_.emplace(digest.lo, key);
  ++stats_.added_entries;
  stats_.added_bytes += bytes.size();
  return DataFileRef{key, digest};
}

std::vector<uint8_t> DataFileWriter::bytes() {
  fb::FlatBufferBuilder fbb(1 << 12);
  std::vector<fb::Offset<sc::DataEntry>> index;
  size_t area = 0;
  for (const auto& [key, e] : entries_) {  // std::map: sorted bytewise, as the runtime searches
    area = align_to_segment(area);
    index.push_back(sc::CreateDataEntry(fbb, fbb.CreateString(key), static_cast<sc::ScalarType>(e.dtype),
                                        fbb.CreateVector<int64_t>(e.sizes), area, e.bytes.size(), e.digest.lo,
                                        e.digest.hi));
    area += e.bytes.size();
  }
  fbb.Finish(sc::CreateDataFile(fbb, kDataFileFormatVersion, fbb.CreateVector(index)), sc::DataFileIdentifier());

  std::vector<uint8_t> area_bytes(area, 0);
  size_t offset = 0;
  for (const auto& [key, e] : entries_) {
    offset = align_to_segment(offset);
    if (!e.bytes.empty()) std::memcpy(area_bytes.data() + offset, e.bytes.data(), e.bytes.size());
    offset += e.bytes.size();
  }
  std::vector<uint8_t> file = assemble_file(kPtdMagic, kDataFileFormatVersion, fbb.GetBufferPointer(), fbb.GetSize(),
                                            area_bytes, !entries_.empty());
  stats_.entries = entries_.size();
  stats_.file_bytes = file.size();
  return file;
}

}  // namespace exporter
}  // namespace ember
