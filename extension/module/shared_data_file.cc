#include "extension/module/shared_data_file.h"

#include <sys/stat.h>

#include <mutex>
#include <vector>

#include "runtime/loader/file_data_loader.h"
#include "runtime/loader/mmap_data_loader.h"

namespace ember {
namespace {

struct Identity {
  dev_t device = 0;
  ino_t inode = 0;
  off_t size = 0;
  int64_t mtime_ns = 0;
  bool operator==(const Identity& o) const {
    return device == o.device && inode == o.inode && size == o.size && mtime_ns == o.mtime_ns;
  }
};

struct Registered {
  Identity identity;
  ModuleLoadMode mode;
  DataFile::Verification verification;
  std::weak_ptr<const SharedDataFile> file;
};

std::mutex g_mutex;
std::vector<Registered> g_files;  // guarded by g_mutex; expired entries are swept on open

}  // namespace

Expected<std::shared_ptr<const SharedDataFile>> open_shared_data_file(const std::string& path, ModuleLoadMode mode,
                                                                      DataFile::Verification verification) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    return Status(Error::AccessFailed, "cannot open data file '" + path + "': check the path (the .ptd written by "
                                       "ember export --external-weights)");
  }
  Identity id{st.st_dev, st.st_ino, st.st_size,
              static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec};
  std::lock_guard<std::mutex> lock(g_mutex);
  for (size_t i = 0; i < g_files.size();) {
    if (g_files[i].file.expired()) {
      g_files[i] = g_files.back();
      g_files.pop_back();
      continue;
    }
    const Registered& r = g_files[i];
    if (r.identity == id && r.mode == mode && r.verification >= verification) {
      if (auto shared = r.file.lock()) return shared;
    }
    ++i;
  }
  std::unique_ptr<DataLoader> loader;
  if (mode == ModuleLoadMode::File) {
    Result<FileDataLoader> l = FileDataLoader::open(path.c_str());
    if (!l.ok()) return Status(l.error(), "cannot open data file '" + path + "': check the path and permissions");
    loader.reset(new FileDataLoader(std::move(*l)));
  } else {
    const auto how = mode == ModuleLoadMode::MmapUseMlock ? MmapDataLoader::Lock::Mlock : MmapDataLoader::Lock::None;
    Result<MmapDataLoader> l = MmapDataLoader::open(path.c_str(), how);
    if (!l.ok()) return Status(l.error(), "cannot map data file '" + path + "': check the path");
    loader.reset(new MmapDataLoader(std::move(*l)));
  }
  Diagnostic diag;
  Result<DataFile> file = DataFile::load(loader.get(), verification, &diag);
  if (!file.ok()) {
    return Status(file.error(), "data file '" + path + "': " + (diag.message[0] ? diag.message : "cannot load it"));
  }
  auto shared = std::make_shared<const SharedDataFile>(path, std::move(loader), std::move(*file));
  g_files.push_back(Registered{id, mode, verification, shared});
  return shared;
}

size_t num_open_shared_data_files() {
  std::lock_guard<std::mutex> lock(g_mutex);
  size_t n = 0;
  for (const Registered& r : g_files) n += r.file.expired() ? 0 : 1;
  return n;
}

}  // namespace ember
