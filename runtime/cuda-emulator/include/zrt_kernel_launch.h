//===- zrt_kernel_launch.h - Starting a kernel on the emulator ---*- C++ -*-===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// The emulator's version of runtime/lib/cuda/launch/zrt_kernel_launch.h: each
// block's threads run on the host (as fibers when the kernel has barriers), after
// checking what a GPU would fault on: a pointer argument that is not device memory.
//
//===----------------------------------------------------------------------===//

#ifndef ZRT_KERNEL_LAUNCH_H
#define ZRT_KERNEL_LAUNCH_H

#include "cuda_runtime.h"

#include <cstdint>
#include <string>
#include <type_traits>

namespace zrt::cuda::detail {

template <typename... A> void checkPointers(const char *name, A... args) {
  int index = 0;
  auto one = [&](auto arg) {
    ++index;
    if constexpr (std::is_pointer_v<decltype(arg)>)
      if (arg && !zero_cuda_emulator::isDeviceMemory(arg, 1))
        zero_cuda_emulator::setLaunchError(
            cudaErrorIllegalAddress,
            (std::string(name) + ": argument " + std::to_string(index) +
             " is not device memory")
                .c_str());
  };
  (one(args), ...);
}

template <bool Barriers, typename... P, typename... A>
void startKernel(const char *name, void (*kernel)(P...), int64_t grid, int block,
                 cudaStream_t s, A... args) {
  checkPointers(name, args...);
  auto thread = [=] { kernel(static_cast<P>(args)...); };
  if (Barriers)
    zero_cuda_emulator::launchWithBarriers(s, grid, block, thread);
  else
    zero_cuda_emulator::launch(s, grid, block, thread);
}

} // namespace zrt::cuda::detail

#endif // ZRT_KERNEL_LAUNCH_H
