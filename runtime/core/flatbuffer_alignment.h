// Element alignment of FlatBuffer vectors read in place.
//
// The FlatBuffer verifier (flatbuffers 2.0.8) checks a vector's alignment for its 4-byte length
// only, not for its elements: 8-byte elements ([long], [ulong], [double]) may sit at 4 mod 8,
// and reading them is a misaligned access (undefined behaviour; a fault on some CPUs). Every
// reader of a file's 64-bit vectors (the program, data files, delegate blobs) checks them with
// this after verification. Header-only and independent of the FlatBuffers headers: `Vector` is
// any flatbuffers::Vector<T> of scalars.
#pragma once

#include <cstdint>

namespace ember {

template <typename Vector>
bool elements_aligned(const Vector* v) {
  // An empty vector has no elements to misread (FlatBuffers does not pad those).
  return v == nullptr || v->size() == 0 ||
         reinterpret_cast<uintptr_t>(v->data()) % alignof(decltype(*v->data())) == 0;
}

}  // namespace ember
