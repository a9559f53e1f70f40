// MemoryManager: the memory a Method runs in, all provided by the caller.
//
//  - method_allocator: runtime structures built at init (value table, tensors, kernel
//    argument arrays, delegate state). Must outlive the Method.
//  - planned_arenas: one buffer per arena of the program's memory plan; sizes come from
//    MethodMeta::arena_size(i). Activations, inputs and mutable state live here.
//  - temp_allocator: scratch for kernels, reset after every instruction. May be null when
//    no kernel needs scratch.
//  - shared_state: one buffer per Program::num_shared_state() entry (at least
//    Program::shared_state_nbytes(i) bytes, 8-byte aligned), initialised once with
//    Program::init_shared_state(i, ...): mutable state several methods use (a KV cache that
//    a prefill method writes and a decode method reads). Give every Method of the program the
//    same buffers; they persist across calls of any of them. Empty for programs without it.
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
  Span<Span<uint8_t>> shared_state;
};

}  // namespace ember
