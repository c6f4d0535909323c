//===- Launch.cpp - Emulated kernel launches and __syncthreads -------------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// A grid runs block after block on the host thread that drains its stream; the
// threads of a block that uses __syncthreads run as fibers.
//
//===----------------------------------------------------------------------===//

#include "Emulator.h"

#include <ucontext.h>

#include <cstdint>
#include <cstdlib>
#include <numeric>
#include <random>
#include <string>
#include <vector>

using namespace zero_cuda_emulator::detail;

thread_local uint3 threadIdx, blockIdx;
thread_local dim3 blockDim, gridDim;
thread_local uint64_t zero_cuda_emulator::detail::blockSerial = 0;

void zero_cuda_emulator::setLaunchError(cudaError_t error, const char *why) {
  complain(error, why);
  lastError = error;
}

namespace {

bool validLaunch(int64_t grid, int block) {
  if (grid >= 1 && grid <= 0x7fffffff && block >= 1 && block <= 1024)
    return true;
  zero_cuda_emulator::setLaunchError(cudaErrorInvalidConfiguration,
                                     ("invalid launch: " + std::to_string(grid) +
                                      " blocks of " + std::to_string(block) + " threads")
                                         .c_str());
  return false;
}

//===----------------------------------------------------------------------===//
// Fibers: a block's threads, switched at __syncthreads
//===----------------------------------------------------------------------===//

#if defined(__x86_64__)
// A switch saves the callee-saved registers on the current stack and resumes the
// other stack: tens of nanoseconds, where swapcontext makes a system call (blocks
// of 256 threads meet at many barriers).
extern "C" void zeroEmulatorSwitch(void **save, void *resume);
asm(R"(
  .text
  .globl zeroEmulatorSwitch
  .type zeroEmulatorSwitch, @function
zeroEmulatorSwitch:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .size zeroEmulatorSwitch, .-zeroEmulatorSwitch
)");

/// A suspended stack: where zeroEmulatorSwitch left it.
struct Context {
  void *sp = nullptr;
  /// A fresh context on `stack` that starts in `entry` (which never returns).
  void start(std::vector<char> &stack, void (*entry)()) {
    uintptr_t top = ((uintptr_t)stack.data() + stack.size()) & ~(uintptr_t)15;
    void **frame = (void **)(top - 64); // six registers, the return address, padding
    for (int i = 0; i < 6; ++i)
      frame[i] = nullptr;
    frame[6] = (void *)entry; // at entry the stack is 8 past 16-aligned, as after a call
    sp = frame;
  }
};
void switchContext(Context &from, Context &to) { zeroEmulatorSwitch(&from.sp, to.sp); }
#else
struct Context {
  ucontext_t uc;
  void start(std::vector<char> &stack, void (*entry)()) {
    getcontext(&uc);
    uc.uc_stack.ss_sp = stack.data();
    uc.uc_stack.ss_size = stack.size();
    uc.uc_link = nullptr;
    makecontext(&uc, entry, 0);
  }
};
void switchContext(Context &from, Context &to) { swapcontext(&from.uc, &to.uc); }
#endif

//===----------------------------------------------------------------------===//
// Order: a GPU runs a grid's blocks, and a block's warps, in no order it
// promises, so atomics complete in an order that changes from run to run (CUDA
// programming guide: "Thread blocks are required to execute independently ... in
// any order"; atomic functions guarantee only that each read-modify-write is
// atomic). The emulator runs each grid's blocks, and each block's threads between
// barriers, in an order drawn afresh for every grid from ZERO_CUDA_EMULATOR_SEED
// (unset: a seed drawn at start), so a result that depends on that order differs
// between runs, as on a GPU.
//===----------------------------------------------------------------------===//

/// The i-th of n in a drawn order: (a i + c) mod n with a coprime to n.
struct DrawnOrder {
  uint64_t a = 1, c = 0, n = 1;
  uint64_t operator()(uint64_t i) const {
    return (uint64_t)(((unsigned __int128)a * i + c) % n);
  }
};

DrawnOrder drawOrder(uint64_t n) {
  static const uint64_t seed = [] {
    const char *env = std::getenv("ZERO_CUDA_EMULATOR_SEED");
    if (env && *env)
      return (uint64_t)std::strtoull(env, nullptr, 10);
    return (uint64_t)std::random_device{}();
  }();
  // Per host thread (a rank draining its device): reproducible for a given seed.
  static thread_local std::mt19937_64 draw(seed + 0x9e3779b97f4a7c15ull *
                                                      (uint64_t)(currentDevice + 1));
  DrawnOrder o;
  o.n = n ? n : 1;
  if (o.n == 1)
    return o;
  o.c = draw() % o.n;
  o.a = 1 + draw() % (o.n - 1);
  while (std::gcd(o.a, o.n) != 1)
    o.a = o.a % (o.n - 1) + 1;
  return o;
}

/// The threads of one block as fibers; __syncthreads switches back to run().
class FiberBlock {
public:
  /// Runs `thread` for each of `block` threads until all have returned.
  void run(int block, const std::function<void()> &thread, const DrawnOrder &order) {
    if ((int)fibers_.size() < block)
      fibers_.resize(block);
    body_ = &thread;
    for (int t = 0; t < block; ++t) {
      Fiber &f = fibers_[t];
      if (f.stack.empty())
        f.stack.resize(kStackBytes);
      f.context.start(f.stack, &FiberBlock::entry);
      f.done = false;
      f.barriers = 0;
    }
    FiberBlock *outer = active;
    active = this;
    for (int live = block; live > 0;) {
      live = 0;
      for (int i = 0; i < block; ++i) {
        int t = (int)order(i);
        if (fibers_[t].done)
          continue;
        current_ = t;
        threadIdx = uint3{(unsigned)t, 0, 0};
        switchContext(scheduler_, fibers_[t].context);
        live += !fibers_[t].done;
      }
      for (int t = 1; t < block; ++t)
        if (fibers_[t].barriers != fibers_[0].barriers)
          fatal("threads 0 and " + std::to_string(t) + " of block " +
                std::to_string(blockIdx.x) + " reached " +
                std::to_string(fibers_[0].barriers) + " and " +
                std::to_string(fibers_[t].barriers) +
                " __syncthreads (a barrier some threads skip)");
    }
    active = outer;
  }

  void barrier() {
    Fiber &f = fibers_[current_];
    ++f.barriers;
    switchContext(f.context, scheduler_);
  }

  static thread_local FiberBlock *active;

private:
  static constexpr size_t kStackBytes = 64 * 1024;
  struct Fiber {
    Context context;
    std::vector<char> stack;
    bool done = false;
    int barriers = 0;
  };

  [[noreturn]] static void entry() {
    FiberBlock &b = *active;
    (*b.body_)();
    Fiber &f = b.fibers_[b.current_];
    f.done = true;
    switchContext(f.context, b.scheduler_); // never resumed
    __builtin_unreachable();
  }

  std::vector<Fiber> fibers_;
  Context scheduler_;
  const std::function<void()> *body_ = nullptr;
  int current_ = 0;
};
thread_local FiberBlock *FiberBlock::active = nullptr;

} // namespace

void __syncthreads() {
  if (!FiberBlock::active)
    fatal("__syncthreads in a kernel launched without barriers (launchWithBarriers)");
  FiberBlock::active->barrier();
}

namespace {

/// Queues `grid` blocks of `block` threads running `thread`: one after another,
/// or, with `barriers`, each block's threads as fibers that meet at __syncthreads.
void launchGrid(cudaStream_t stream, int64_t grid, int block, std::function<void()> thread,
                bool barriers) {
  if (!validLaunch(grid, block))
    return;
  enqueue(stream, [grid, block, barriers, thread = std::move(thread)] {
    static thread_local FiberBlock fibers;
    gridDim = dim3{(unsigned)grid, 1, 1};
    blockDim = dim3{(unsigned)block, 1, 1};
    DrawnOrder blocks = drawOrder(grid);
    for (int64_t i = 0; i < grid; ++i) {
      blockIdx = uint3{(unsigned)blocks(i), 0, 0};
      ++blockSerial;
      DrawnOrder threads = drawOrder(block);
      if (barriers) {
        fibers.run(block, thread, threads);
        continue;
      }
      for (int i = 0; i < block; ++i) {
        threadIdx = uint3{(unsigned)threads(i), 0, 0};
        thread();
      }
    }
  });
}

} // namespace

void zero_cuda_emulator::launch(cudaStream_t stream, int64_t grid, int block,
                                std::function<void()> thread) {
  launchGrid(stream, grid, block, std::move(thread), /*barriers=*/false);
}

void zero_cuda_emulator::launchWithBarriers(cudaStream_t stream, int64_t grid, int block,
                                            std::function<void()> thread) {
  launchGrid(stream, grid, block, std::move(thread), /*barriers=*/true);
}
