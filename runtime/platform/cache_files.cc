#include "runtime/platform/cache_files.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>

namespace ember {
namespace {

int write_all(int fd, const void* data, size_t size) {
  const uint8_t* p = static_cast<const uint8_t*>(data);
  while (size > 0) {
    const ssize_t n = ::write(fd, p, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return n < 0 ? errno : EIO;
    p += n;
    size -= static_cast<size_t>(n);
  }
  return 0;
}

}  // namespace

bool make_directories(const std::string& dir, mode_t mode) {
  for (size_t i = 1; i <= dir.size(); ++i) {
    if (i == dir.size() || dir[i] == '/') {
      const std::string prefix = dir.substr(0, i);
      if (::mkdir(prefix.c_str(), mode) != 0 && errno != EEXIST) return false;
    }
  }
  struct stat st;
  return !dir.empty() && ::stat(dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

int write_file_atomically(const std::string& path, const void* first, size_t first_size, const void* second,
                          size_t second_size) {
  static std::atomic<unsigned> counter{0};
  const std::string tmp =
      path + ".tmp-" + std::to_string(static_cast<long>(::getpid())) + "-" + std::to_string(counter++);
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return errno;
  int err = write_all(fd, first, first_size);
  if (err == 0 && second_size > 0) err = write_all(fd, second, second_size);
  if (::close(fd) != 0 && err == 0) err = errno;
  if (err == 0 && ::rename(tmp.c_str(), path.c_str()) != 0) err = errno;
  if (err != 0) ::unlink(tmp.c_str());
  return err;
}

}  // namespace ember
