// Reading a .pte file for the commands that look at its tables (inspect, ops) without
// loading it: the file header and the verified program FlatBuffer.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/program/file_header.h"
#include "schema/program_generated.h"

namespace ember {
namespace tools {

struct ProgramFile {
  std::vector<uint8_t> bytes;         // the whole file
  std::vector<uint64_t> flatbuffer;   // an aligned copy of the FlatBuffer, for the verifier
  FileHeader header;
  const schema::Program* program = nullptr;  // into `flatbuffer`
};

// Reads and verifies `path` into *out; returns "" or what is wrong with it.
std::string read_program_file(const char* path, ProgramFile* out);

// "<ns>::<op>.<overload>" as kernels register it (an empty overload is "default").
std::string operator_key(const schema::Operator* op);

}  // namespace tools
}  // namespace ember
