#include "tools/commands/program_file.h"

#include <cstring>
#include <fstream>
#include <iterator>

#include "flatbuffers/flatbuffers.h"

namespace ember {
namespace tools {

std::string read_program_file(const char* path, ProgramFile* out) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return std::string("cannot open ") + path;
  out->bytes.assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
  FileHeader& h = out->header;
  if (out->bytes.size() < kFileHeaderSize || !parse_file_header(out->bytes.data(), &h)) {
    return std::string(path) + " is not a .pte program (bad magic)";
  }
  if (h.flatbuffer_offset + h.flatbuffer_size > out->bytes.size()) return std::string(path) + " is truncated";
  out->flatbuffer.assign((h.flatbuffer_size + 7) / 8, 0);
  std::memcpy(out->flatbuffer.data(), out->bytes.data() + h.flatbuffer_offset, h.flatbuffer_size);
  const uint8_t* fb = reinterpret_cast<const uint8_t*>(out->flatbuffer.data());
  flatbuffers::Verifier verifier(fb, h.flatbuffer_size);
  if (!schema::VerifyProgramBuffer(verifier)) return std::string(path) + ": the program FlatBuffer does not verify";
  out->program = schema::GetProgram(fb);
  return "";
}

std::string operator_key(const schema::Operator* op) {
  std::string key = op->name() ? op->name()->str() : "?";
  return key + "." + (op->overload() && op->overload()->size() ? op->overload()->str() : "default");
}

}  // namespace tools
}  // namespace ember
