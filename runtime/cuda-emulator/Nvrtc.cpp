//===- Nvrtc.cpp - NVRTC and the driver's modules, emulated ---------------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// A program compiles with the host compiler that built the emulator
// (ZERO_EMULATOR_CXX), from its source and headers written to a fresh folder, into
// a shared object; the module loads that object's bytes from memory (memfd), and a
// launch runs its kernel's host entry for every thread of the grid.
//
//===----------------------------------------------------------------------===//

#include "Emulator.h"

#include <cuda.h>
#include <nvrtc.h>

#include <dlfcn.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <elf.h>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#ifndef ZERO_EMULATOR_CXX
#define ZERO_EMULATOR_CXX "c++"
#endif

struct _nvrtcProgram {
  std::string source, name;
  std::vector<std::pair<std::string, std::string>> headers; // include name, text
  std::string log, binary;
};

struct CUmod_st {
  void *handle = nullptr;
};

struct CUfunc_st {
  void (*thread)(void *const *, unsigned long long) = nullptr;
  int params = 0, pointerParams = 0;
  std::string name;
};

namespace {

bool writeFile(const std::string &path, const std::string &text) {
  std::ofstream f(path, std::ios::binary);
  f << text;
  return bool(f);
}

std::string readFile(const std::string &path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

/// The bytes of the ELF object at `image`: up to the end of its section headers,
/// which the linker writes last.
size_t elfSize(const void *image) {
  const auto *h = static_cast<const Elf64_Ehdr *>(image);
  if (std::memcmp(h->e_ident, ELFMAG, SELFMAG) != 0 || h->e_ident[EI_CLASS] != ELFCLASS64)
    return 0;
  return h->e_shoff + (size_t)h->e_shnum * h->e_shentsize;
}

} // namespace

const char *nvrtcGetErrorString(nvrtcResult result) {
  switch (result) {
  case NVRTC_SUCCESS:
    return "NVRTC_SUCCESS";
  case NVRTC_ERROR_INVALID_INPUT:
    return "NVRTC_ERROR_INVALID_INPUT";
  case NVRTC_ERROR_INVALID_PROGRAM:
    return "NVRTC_ERROR_INVALID_PROGRAM";
  case NVRTC_ERROR_INVALID_OPTION:
    return "NVRTC_ERROR_INVALID_OPTION";
  case NVRTC_ERROR_COMPILATION:
    return "NVRTC_ERROR_COMPILATION";
  default:
    return "NVRTC_ERROR (emulated)";
  }
}

nvrtcResult nvrtcVersion(int *major, int *minor) {
  *major = 13;
  *minor = 0;
  return NVRTC_SUCCESS;
}

nvrtcResult nvrtcCreateProgram(nvrtcProgram *prog, const char *src, const char *name,
                               int numHeaders, const char *const *headers,
                               const char *const *includeNames) {
  if (!prog || !src || numHeaders < 0 || (numHeaders > 0 && (!headers || !includeNames)))
    return NVRTC_ERROR_INVALID_INPUT;
  auto *p = new _nvrtcProgram;
  p->source = src;
  p->name = name ? name : "default_program";
  for (int i = 0; i < numHeaders; ++i)
    p->headers.push_back({includeNames[i], headers[i]});
  *prog = p;
  return NVRTC_SUCCESS;
}

nvrtcResult nvrtcDestroyProgram(nvrtcProgram *prog) {
  if (!prog || !*prog)
    return NVRTC_ERROR_INVALID_PROGRAM;
  delete *prog;
  *prog = nullptr;
  return NVRTC_SUCCESS;
}

nvrtcResult nvrtcCompileProgram(nvrtcProgram prog, int numOptions, const char *const *options) {
  if (!prog)
    return NVRTC_ERROR_INVALID_PROGRAM;
  // NVRTC's --fmad defaults to true: a*b+c contracted into an FMA, rounded once.
  // The emulator compiles without contraction (-ffp-contract=off, below), so it
  // reproduces only a compile that says --fmad=false (NVRTC user guide, "Supported
  // Compile Options": --fmad, default true).
  bool noContraction = false;
  for (int i = 0; i < numOptions; ++i) {
    std::string o = options[i];
    if (o == "--fmad=false" || o == "-fmad=false") {
      noContraction = true;
      continue;
    }
    if (o.rfind("--gpu-architecture=", 0) != 0 && o != "-std=c++17" &&
        o != "--use_fast_math=false") {
      prog->log = "nvrtc (emulated): unknown option '" + o + "'\n";
      return NVRTC_ERROR_INVALID_OPTION;
    }
  }
  if (!noContraction) {
    prog->log = "nvrtc (emulated): the compile contracts a*b+c into fused multiply-adds "
                "(NVRTC's default --fmad=true), which the emulator's host build cannot "
                "reproduce: pass --fmad=false\n";
    return NVRTC_ERROR_INVALID_OPTION;
  }
  char dir[] = "/tmp/zero-nvrtc-XXXXXX";
  if (!::mkdtemp(dir)) {
    prog->log = std::string("cannot make a folder to compile in: ") + std::strerror(errno);
    return NVRTC_ERROR_COMPILATION;
  }
  std::string root = dir;
  bool written = writeFile(root + "/program.cpp", prog->source);
  for (const auto &[name, text] : prog->headers) {
    std::filesystem::path path = root + "/include/" + name;
    std::error_code made;
    std::filesystem::create_directories(path.parent_path(), made);
    written = written && !made && writeFile(path.string(), text);
  }
  // -ffp-contract=off: as the interpreter's host build rounds (no FMA on x86-64's
  // baseline); the same optimization level as the emulated build's kernels.
  std::string command = std::string(ZERO_EMULATOR_CXX) +
                        " -std=c++17 -O2 -ffp-contract=off -fPIC -shared -w -I " + root +
                        "/include -o " + root + "/program.so " + root + "/program.cpp 2> " +
                        root + "/log";
  int rc = written ? std::system(command.c_str()) : -1;
  prog->log = written ? readFile(root + "/log") : "cannot write the program's files\n";
  if (rc == 0)
    prog->binary = readFile(root + "/program.so");
  std::error_code removed;
  std::filesystem::remove_all(root, removed);
  if (rc != 0 || prog->binary.empty()) {
    if (rc != 0 && written)
      prog->log += "(" + std::string(ZERO_EMULATOR_CXX) + " exited with status " +
                   std::to_string(rc) + ")\n";
    return NVRTC_ERROR_COMPILATION;
  }
  return NVRTC_SUCCESS;
}

nvrtcResult nvrtcGetProgramLogSize(nvrtcProgram prog, size_t *size) {
  if (!prog)
    return NVRTC_ERROR_INVALID_PROGRAM;
  *size = prog->log.size() + 1;
  return NVRTC_SUCCESS;
}

nvrtcResult nvrtcGetProgramLog(nvrtcProgram prog, char *log) {
  if (!prog)
    return NVRTC_ERROR_INVALID_PROGRAM;
  std::memcpy(log, prog->log.c_str(), prog->log.size() + 1);
  return NVRTC_SUCCESS;
}

nvrtcResult nvrtcGetCUBINSize(nvrtcProgram prog, size_t *size) {
  if (!prog)
    return NVRTC_ERROR_INVALID_PROGRAM;
  *size = prog->binary.size();
  return NVRTC_SUCCESS;
}

nvrtcResult nvrtcGetCUBIN(nvrtcProgram prog, char *cubin) {
  if (!prog)
    return NVRTC_ERROR_INVALID_PROGRAM;
  std::memcpy(cubin, prog->binary.data(), prog->binary.size());
  return NVRTC_SUCCESS;
}

CUresult cuGetErrorString(CUresult error, const char **text) {
  switch (error) {
  case CUDA_SUCCESS:
    *text = "no error";
    break;
  case CUDA_ERROR_INVALID_IMAGE:
    *text = "device kernel image is invalid";
    break;
  case CUDA_ERROR_NOT_FOUND:
    *text = "named symbol not found";
    break;
  case CUDA_ERROR_INVALID_HANDLE:
    *text = "invalid resource handle";
    break;
  default:
    *text = "invalid argument";
  }
  return CUDA_SUCCESS;
}

CUresult cuModuleLoadData(CUmodule *module, const void *image) {
  if (!module || !image)
    return CUDA_ERROR_INVALID_VALUE;
  size_t bytes = elfSize(image);
  if (bytes == 0)
    return CUDA_ERROR_INVALID_IMAGE;
  int fd = ::memfd_create("zero-generated-kernels", MFD_CLOEXEC);
  if (fd < 0)
    return CUDA_ERROR_INVALID_VALUE;
  bool written = ::write(fd, image, bytes) == (ssize_t)bytes;
  void *handle = written
                     ? ::dlopen(("/proc/self/fd/" + std::to_string(fd)).c_str(), RTLD_NOW | RTLD_LOCAL)
                     : nullptr;
  ::close(fd);
  if (!handle)
    return CUDA_ERROR_INVALID_IMAGE;
  *module = new CUmod_st{handle};
  return CUDA_SUCCESS;
}

CUresult cuModuleUnload(CUmodule module) {
  if (!module)
    return CUDA_ERROR_INVALID_HANDLE;
  ::dlclose(module->handle);
  delete module;
  return CUDA_SUCCESS;
}

CUresult cuModuleGetFunction(CUfunction *function, CUmodule module, const char *name) {
  if (!function || !module || !name)
    return CUDA_ERROR_INVALID_VALUE;
  std::string n = name;
  auto *thread = reinterpret_cast<void (*)(void *const *, unsigned long long)>(
      ::dlsym(module->handle, (n + "_thread").c_str()));
  auto *params = static_cast<const int *>(::dlsym(module->handle, (n + "_params").c_str()));
  auto *pointers =
      static_cast<const int *>(::dlsym(module->handle, (n + "_pointer_params").c_str()));
  if (!thread || !params || !pointers)
    return CUDA_ERROR_NOT_FOUND;
  if (*params < 0 || *params > 16 || *pointers < 0 || *pointers > *params)
    return CUDA_ERROR_INVALID_IMAGE;
  // Functions live as long as the process, as the kernels' closures may.
  *function = new CUfunc_st{thread, *params, *pointers, n};
  return CUDA_SUCCESS;
}

CUresult cuLaunchKernel(CUfunction f, unsigned gridX, unsigned gridY, unsigned gridZ,
                        unsigned blockX, unsigned blockY, unsigned blockZ,
                        unsigned sharedMemBytes, CUstream stream, void **kernelParams,
                        void **extra) {
  if (!f || !kernelParams || extra || gridY != 1 || gridZ != 1 || blockY != 1 || blockZ != 1)
    return CUDA_ERROR_INVALID_VALUE; // the backend's launches are one-dimensional
  // The parameters' values now, as the driver copies them at the launch.
  auto values = std::make_shared<std::vector<uint64_t>>(f->params);
  for (int i = 0; i < f->params; ++i)
    std::memcpy(&(*values)[i], kernelParams[i], 8);
  for (int i = 0; i < f->pointerParams; ++i) {
    void *p = reinterpret_cast<void *>((*values)[i]);
    if (p && !zero_cuda_emulator::isDeviceMemory(p, 1)) {
      zero_cuda_emulator::setLaunchError(cudaErrorIllegalAddress,
                                         (f->name + ": argument " + std::to_string(i + 1) +
                                          " is not device memory")
                                             .c_str());
      return CUDA_ERROR_LAUNCH_FAILED;
    }
  }
  auto thread = f->thread;
  zero_cuda_emulator::launch(stream, gridX, (int)blockX, [thread, values] {
    void *params[16];
    for (size_t i = 0; i < values->size(); ++i)
      params[i] = &(*values)[i];
    thread(params, (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x);
  });
  return CUDA_SUCCESS; // a bad configuration is cudaGetLastError's, as for every launch
}
