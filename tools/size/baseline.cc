// Baseline for tools/size/measure_size.sh: the same file access and output as
// minimal_runner.cc (open, fstat, pread into aligned memory, printf of four floats) without
// the Ember runtime, so the size difference is the runtime's own cost.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  int fd = ::open(argv[1], O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 1;
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) return 1;
  size_t size = static_cast<size_t>(st.st_size);
  void* buffer = nullptr;
  if (posix_memalign(&buffer, 64, size == 0 ? 1 : size) != 0) return 1;
  if (::pread(fd, buffer, size, 0) != static_cast<ssize_t>(size)) return 1;
  ::close(fd);
  float sum = 0;
  for (size_t i = 0; i < size; ++i) sum += static_cast<const unsigned char*>(buffer)[i];
  std::printf("%g %g %g %g\n", sum, sum + 1, sum + 2, sum + 3);
  std::free(buffer);
  return 0;
}
