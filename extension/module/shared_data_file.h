// Data files (.ptd) opened once per process: every Module that names the same file shares one
// mapping and one verified DataFile, so several programs over one base data file hold one
// copy of its weights (docs/pte-format.md, "Data files").
//
// Identity is the file itself (device, inode, size, modification time): two paths to one file
// share, and a file replaced or rewritten since is opened afresh (programs still using the old
// one keep it alive). Lifetime: shared_ptr; the registry holds weak references only, so a file
// is unmapped when its last user lets go. Thread-safety: open_shared_data_file may be called
// from any thread; a SharedDataFile is immutable.
#pragma once

#include <memory>
#include <string>

#include "extension/module/module.h"
#include "runtime/loader/data_loader.h"
#include "runtime/program/data_file.h"

namespace ember {

class SharedDataFile {
 public:
  SharedDataFile(std::string path, std::unique_ptr<DataLoader> loader, DataFile file)
      : path_(std::move(path)), loader_(std::move(loader)), file_(std::move(file)) {}
  const DataFile& file() const { return file_; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::unique_ptr<DataLoader> loader_;  // declared before file_: outlives it
  DataFile file_;
};

// The process's SharedDataFile for `path` (ModuleLoadMode as for programs), opening and
// verifying it on first use. A file already open is shared when it was opened with the same
// mode and a verification at least as strict; otherwise it is opened again.
Expected<std::shared_ptr<const SharedDataFile>> open_shared_data_file(
    const std::string& path, ModuleLoadMode mode = ModuleLoadMode::Mmap,
    DataFile::Verification verification = DataFile::Verification::Full);

// How many distinct data files this process has open (tests, diagnostics).
size_t num_open_shared_data_files();

}  // namespace ember
