#include "runtime/backend/backend.h"

#include <cstring>

#include "runtime/backend/delegate_init.h"

namespace ember {
namespace {

struct Registration {
  const char* id;
  Backend* backend;
};

struct Table {
  Registration entries[kMaxBackends];
  size_t count = 0;
};

Table& table() {
  static Table t;
  return t;
}

}  // namespace

bool register_backend(const char* id, Backend* backend) {
  Table& t = table();
  if (id == nullptr || backend == nullptr || t.count >= kMaxBackends) return false;
  if (find_backend(id) != nullptr) return false;
  t.entries[t.count++] = Registration{id, backend};
  enable_delegate_init();  // only now can a delegate find a backend
  return true;
}

Backend* find_backend(const char* id) {
  const Table& t = table();
  for (size_t i = 0; i < t.count; ++i) {
    if (std::strcmp(t.entries[i].id, id) == 0) return t.entries[i].backend;
  }
  return nullptr;
}

size_t num_registered_backends() { return table().count; }
const char* registered_backend_id(size_t index) {
  return index < table().count ? table().entries[index].id : nullptr;
}

}  // namespace ember
