// Internal to //runtime/executor (not a public header): the instruction table entry and the
// instruction loop shared by the untraced execute() (method.cc instantiates
// run_instructions<false>) and the traced one (method_tracing.cc instantiates <true>), so
// the traced loop lives only in the tracing object file.
#pragma once

#include <cstddef>
#include <cstdint>

#include "runtime/executor/method.h"
#include "runtime/platform/diagnostic.h"
#include "runtime/platform/platform.h"
#include "schema/program_generated.h"

namespace ember {

struct Method::Instruction {
  enum class Kind : uint8_t { Kernel, Delegate, Move, JumpFalse, Nop };
  Kind kind = Kind::Nop;
  KernelFn fn = nullptr;
  const char* op_name = "";
  EValue** args = nullptr;
  uint32_t num_args = 0;
  uint32_t a = 0;  // delegate index / move source / jump condition
  uint32_t b = 0;  // move target / jump destination
};

// Why a kernel must not be called with these arguments, or null. A verified program can still
// declare a tensor with sizes but no storage (unplanned) and pass it to a kernel; checking here,
// once per call, keeps every kernel (portable, optimized, a user's custom operator) from being
// handed memory it would read or write past, whatever argument accessor it uses.
inline const char* unfit_kernel_argument(EValue* const* args, uint32_t num_args) {
  for (uint32_t k = 0; k < num_args; ++k) {
    const EValue& v = *args[k];
    if (v.is_tensor()) {
      if (v.as_tensor != nullptr && !v.as_tensor->fits_storage()) {
        return "a tensor argument does not fit the planned shape/capacity (sizes larger than its memory)";
      }
    } else if (v.is_tensor_list()) {
      for (const Tensor* t : v.as_tensor_list) {
        if (t != nullptr && !t->fits_storage()) {
          return "a tensor in a list argument does not fit the planned shape/capacity (sizes larger than its memory)";
        }
      }
    }
  }
  return nullptr;
}

template <bool kTraced>
Error Method::run_instructions() {
  KernelContext ctx;
  ctx.temp = memory_.temp_allocator;
  ctx.thread_pool = thread_pool_;
  ctx.diag = &diag_;
  BackendExecuteContext backend_ctx{memory_.temp_allocator, thread_pool_, &diag_};
  EventTracer* const tracer = event_tracer_;
  const uint32_t run = kTraced ? trace_runs_++ : 0;
  const uint64_t run_start_ns = kTraced ? platform_monotonic_ns() : 0;
  if constexpr (kTraced) {
    backend_ctx.event_tracer = tracer;
    backend_ctx.run = run;
  }
  size_t pc = 0;
  size_t steps = 0;
  // Bound the number of steps so a malformed jump loop cannot hang the caller.
  const size_t max_steps = num_instructions_ * 1024 + 1024;
  while (pc < num_instructions_) {
    if (++steps > max_steps) return fail(&diag_, Error::InvalidProgram, "execute: too many steps (jump loop?)");
    const Instruction& ins = instructions_[pc];
    const uint64_t start_ns = kTraced ? platform_monotonic_ns() : 0;
    size_t next = pc + 1;
    Error err = Error::Ok;
    switch (ins.kind) {
      case Instruction::Kind::Kernel:
        ctx.op_name = ins.op_name;
        if (const char* why = unfit_kernel_argument(ins.args, ins.num_args)) {
          err = ctx.fail(Error::InvalidProgram, why);
          break;
        }
        err = ins.fn(ctx, ins.args, ins.num_args);
        break;
      case Instruction::Kind::Delegate:
        if constexpr (kTraced) {
          backend_ctx.instruction = static_cast<uint32_t>(pc);
          backend_ctx.delegate_index = ins.a;
          TraceEvent about;
          describe_instruction(pc, &about);
          backend_ctx.debug_name = about.debug_name;
        }
        err = delegate_backends_[ins.a]->execute(backend_ctx, delegate_handles_[ins.a], ins.args,
                                                 ins.num_args);
        break;
      case Instruction::Kind::Move:
        values_[ins.b] = values_[ins.a];
        break;
      case Instruction::Kind::JumpFalse:
        // The verifier saw a Bool here, but a kernel's scalar output may have retagged it
        // (a hostile program wrote sym_size's Int into the condition): read it only as a Bool.
        if (!values_[ins.a].is_bool()) {
          err = fail(&diag_, Error::InvalidProgram,
                     "execute: the jump condition (value %u) is no longer a Bool: an instruction wrote another kind into it",
                     ins.a);
          break;
        }
        if (!values_[ins.a].as_bool) next = ins.b;
        break;
      case Instruction::Kind::Nop:
        break;
    }
    if (err != Error::Ok) return instruction_failed(err, pc);
    if (memory_.temp_allocator != nullptr) memory_.temp_allocator->reset();
    if constexpr (kTraced) {
      TraceEvent e;
      e.kind = TraceEventKind::Instruction;
      e.run = run;
      e.instruction = static_cast<uint32_t>(pc);
      e.delegate_index = ins.kind == Instruction::Kind::Delegate ? ins.a : kNoTraceIndex;
      e.start_ns = start_ns;
      e.end_ns = platform_monotonic_ns();
      describe_instruction(pc, &e);  // name, debug name, source, outputs
      tracer->record(e);
    }
    pc = next;
  }
  if constexpr (kTraced) {
    TraceEvent e;
    e.kind = TraceEventKind::Execute;
    e.run = run;
    e.name = method_->name() != nullptr ? method_->name()->c_str() : "";
    e.start_ns = run_start_ns;
    e.end_ns = platform_monotonic_ns();
    tracer->record(e);
  }
  return Error::Ok;
}

}  // namespace ember
