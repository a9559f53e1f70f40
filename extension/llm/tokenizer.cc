#include "extension/llm/tokenizer.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "extension/llm/bpe_tokenizer.h"
#include "extension/llm/sentencepiece_tokenizer.h"

namespace ember {
namespace llm {

Expected<std::unique_ptr<Tokenizer>> load_tokenizer_from_buffer(std::string_view bytes,
                                                               const std::string& origin) {
  size_t i = 0;
  while (i < bytes.size() && (bytes[i] == ' ' || bytes[i] == '\t' || bytes[i] == '\n' || bytes[i] == '\r')) ++i;
  if (i < bytes.size() && bytes[i] == '{') return load_bpe_tokenizer(bytes, origin);
  if (bytes.empty()) {
    return Status(Error::InvalidArgument, origin + ": empty file; expected a tokenizer.json or a "
                                                   "SentencePiece .model");
  }
  return load_sentencepiece_tokenizer(bytes, origin);
}

Expected<std::unique_ptr<Tokenizer>> load_tokenizer(const std::string& path) {
  struct stat info;
  if (stat(path.c_str(), &info) != 0) {
    return Status(Error::AccessFailed, "cannot open tokenizer '" + path + "': " + std::strerror(errno) +
                                           " (pass the model's tokenizer.json or tokenizer.model)");
  }
  if (!S_ISREG(info.st_mode)) {
    return Status(Error::AccessFailed, "tokenizer '" + path + "' is not a regular file");
  }
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) {
    return Status(Error::AccessFailed, "cannot open tokenizer '" + path + "': " + std::strerror(errno));
  }
  std::string bytes;
  char buf[1 << 16];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), f)) > 0) bytes.append(buf, n);
  const bool failed = std::ferror(f) != 0;
  std::fclose(f);
  if (failed) return Status(Error::AccessFailed, "cannot read tokenizer '" + path + "'");
  return load_tokenizer_from_buffer(bytes, path);
}

}  // namespace llm
}  // namespace ember
