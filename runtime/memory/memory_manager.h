// MemoryManager: the memory a Method runs in, all provided by the caller.
//
//  - method_allocator: runtime structures built at init (value table, tensors, kernel
//    argument arrays, delegate state). Must outlive the Method.
//  - planned_arenas: one buffer per arena of the program's memory plan; sizes come from
//    MethodMeta::arena_size(i). Activations, inputs and mutable state live here.
//  - temp_allocator: scratch for kernels, reset after every instruction. May be null when
//    no kernel needs scratch.
// The manager only refers to these; the caller owns them. Thread-safety: give every Method
// its own MemoryManager, allocators and arenas; Methods running concurrently must not share
// any of them (planned arenas hold the method's activations and inputs).
#pragma once

#include <cstdint>

#include "runtime/core/span.h"
#include "runtime/memory/memory_allocator.h"

namespace ember {

struct MemoryManager {
  MemoryAllocator* method_allocator = nullptr;
  Span<Span<uint8_t>> planned_arenas;
  MemoryAllocator* temp_allocator = nullptr;
};

}  // namespace ember
