//===- GeneratedKernels.cpp - Kernels compiled when a plan is bound -------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#include "GeneratedKernels.h"

#include "CudaContext.h"
#include "zrt/AtomicFile.h"
#include "zrt/InputFile.h"
#include "zrt/Error.h"

#include <cuda.h>
#include <nvrtc.h>

#ifndef ZERO_CUDA_EMULATOR
#include <dlfcn.h>
#endif

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <sys/stat.h>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>

using namespace zrt;
using namespace zrt::cuda;

struct GeneratedKernels::Kernel {
  FusedKernelSource source;
  CUfunction function = nullptr;
};

struct GeneratedKernels::Module {
  CUmodule module = nullptr;
};

namespace {

/// NVRTC's functions, and the driver's module functions: loaded apart, as
/// compiling needs no driver (the tests compile for GPUs they do not have).
struct Nvrtc {
  std::string library;
  decltype(&::nvrtcCreateProgram) createProgram;
  decltype(&::nvrtcDestroyProgram) destroyProgram;
  decltype(&::nvrtcCompileProgram) compileProgram;
  decltype(&::nvrtcGetProgramLogSize) logSize;
  decltype(&::nvrtcGetProgramLog) log;
  decltype(&::nvrtcGetCUBINSize) cubinSize;
  decltype(&::nvrtcGetCUBIN) cubin;
  decltype(&::nvrtcGetErrorString) error;
  decltype(&::nvrtcVersion) version;
};
struct Driver {
  decltype(&::cuModuleLoadData) loadData;
  decltype(&::cuModuleUnload) unload;
  decltype(&::cuModuleGetFunction) getFunction;
  decltype(&::cuLaunchKernel) launchKernel;
  decltype(&::cuGetErrorString) error;
};

#ifdef ZERO_CUDA_EMULATOR
Nvrtc loadNvrtc() {
  return {"linked (emulated)", &nvrtcCreateProgram, &nvrtcDestroyProgram, &nvrtcCompileProgram,
          &nvrtcGetProgramLogSize, &nvrtcGetProgramLog, &nvrtcGetCUBINSize,
          &nvrtcGetCUBIN, &nvrtcGetErrorString, &nvrtcVersion};
}
Driver loadDriver() {
  return {&cuModuleLoadData, &cuModuleUnload, &cuModuleGetFunction, &cuLaunchKernel,
          &cuGetErrorString};
}
/// The emulator compiles for the host.
std::string architecture() { return "host"; }
#else
template <typename F> void resolve(void *handle, const char *library, const char *name, F &out) {
  out = reinterpret_cast<F>(::dlsym(handle, name));
  ZRT_CHECK(out, library << " has no function " << name);
}
Nvrtc loadNvrtc() {
  // NVRTC from the toolkit zero-run was built with (its run path) or
  // LD_LIBRARY_PATH.
  const char *lib = "libnvrtc.so.13";
  void *h = ::dlopen(lib, RTLD_NOW | RTLD_LOCAL);
  ZRT_CHECK(h, "cannot load NVRTC, which compiles the generated fused kernels: "
                   << ::dlerror()
                   << " (put CUDA 13's libraries on LD_LIBRARY_PATH, or run with "
                      "--fused-kernels=interpreter)");
  Nvrtc a;
  resolve(h, lib, "nvrtcCreateProgram", a.createProgram);
  resolve(h, lib, "nvrtcDestroyProgram", a.destroyProgram);
  resolve(h, lib, "nvrtcCompileProgram", a.compileProgram);
  resolve(h, lib, "nvrtcGetProgramLogSize", a.logSize);
  resolve(h, lib, "nvrtcGetProgramLog", a.log);
  resolve(h, lib, "nvrtcGetCUBINSize", a.cubinSize);
  resolve(h, lib, "nvrtcGetCUBIN", a.cubin);
  resolve(h, lib, "nvrtcGetErrorString", a.error);
  resolve(h, lib, "nvrtcVersion", a.version);
  Dl_info info;
  a.library = ::dladdr(reinterpret_cast<void *>(a.version), &info) && info.dli_fname
                  ? info.dli_fname
                  : lib;
  return a; // the handle stays open for the life of the process
}
Driver loadDriver() {
  const char *lib = "libcuda.so.1"; // the system's: the runtime has loaded it
  void *h = ::dlopen(lib, RTLD_NOW | RTLD_LOCAL);
  ZRT_CHECK(h, "cannot load the CUDA driver (" << lib << "): " << ::dlerror());
  Driver a;
  resolve(h, lib, "cuModuleLoadData", a.loadData);
  resolve(h, lib, "cuModuleUnload", a.unload);
  resolve(h, lib, "cuModuleGetFunction", a.getFunction);
  resolve(h, lib, "cuLaunchKernel", a.launchKernel);
  resolve(h, lib, "cuGetErrorString", a.error);
  return a;
}
/// The current device's architecture, as NVRTC names it (sm_90).
std::string architecture() {
  int device = 0, major = 0, minor = 0;
  ZERO_CUDA_CHECK(cudaGetDevice(&device));
  ZERO_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  ZERO_CUDA_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device));
  return "sm_" + std::to_string(major) + std::to_string(minor);
}
#endif

const Nvrtc &nvrtc() {
  static std::once_flag once;
  static Nvrtc a;
  std::call_once(once, [] { a = loadNvrtc(); });
  return a;
}
const Driver &driver() {
  static std::once_flag once;
  static Driver a;
  std::call_once(once, [] { a = loadDriver(); });
  return a;
}

std::string cuMessage(CUresult rc) {
  const char *text = nullptr;
  driver().error(rc, &text);
  return text ? text : "CUDA driver error " + std::to_string((int)rc);
}

/// A cache file: kMagic, three 8-byte sizes and a hash (the text the binary was
/// compiled from: the translation unit and its options; the binary's size and its
/// sourceHash), the text, the binary. Checked before the binary goes to the
/// driver, which takes a pointer and no size: a cut or damaged file, or one
/// compiled from another text (another program's, or another version's, under
/// the same name), is compiled again, never loaded.
constexpr char kMagic[16] = "zero-opt kernl2";
/// More than any plan's kernels take: a larger file under the cache's name is
/// not read.
constexpr int64_t kMaxCacheFileBytes = int64_t(1) << 30;

std::string cacheFile(const std::string &compiledFrom, const std::string &binary) {
  uint64_t header[3] = {compiledFrom.size(), binary.size(), sourceHash(binary)};
  return std::string(kMagic, sizeof kMagic) +
         std::string(reinterpret_cast<const char *>(header), sizeof header) + compiledFrom +
         binary;
}

/// The binary in cache file `bytes` if it is one whole and was compiled from
/// `compiledFrom`; else "" with `why` saying which it is not.
std::string binaryOf(const std::string &bytes, const std::string &compiledFrom,
                     std::string &why) {
  const size_t head = sizeof kMagic + 3 * sizeof(uint64_t);
  why = "damaged (not a whole cache file)";
  if (bytes.size() < head || bytes.compare(0, sizeof kMagic, kMagic, sizeof kMagic) != 0)
    return "";
  uint64_t header[3];
  std::memcpy(header, bytes.data() + sizeof kMagic, sizeof header);
  if (header[0] > bytes.size() - head || header[1] != bytes.size() - head - header[0])
    return "";
  if (bytes.compare(head, header[0], compiledFrom) != 0) {
    why = "compiled from another source (another program's or version's kernels under "
          "this name)";
    return "";
  }
  std::string binary = bytes.substr(head + header[0]);
  if (sourceHash(binary) != header[2])
    return "";
  why.clear();
  return binary;
}

/// Compiled translation units by key: ranks that are threads of one process
/// compile each once.
std::mutex compiledMutex;
std::map<std::string, std::string> compiled;

} // namespace

std::string GeneratedKernels::compileSource(const std::string &source, const std::string &arch) {
  const Nvrtc &a = nvrtc();
  const auto &headers = generatedKernelHeaders();
  std::vector<const char *> names, texts;
  for (const auto &[name, text] : headers) {
    names.push_back(name.c_str());
    texts.push_back(text.c_str());
  }
  nvrtcProgram program = nullptr;
  nvrtcResult rc = a.createProgram(&program, source.c_str(), "zero_generated_kernels.cu",
                                   (int)names.size(), texts.data(), names.data());
  ZRT_CHECK(rc == NVRTC_SUCCESS, "NVRTC could not take the generated kernels: "
                                     << a.error(rc));
  std::string option = "--gpu-architecture=" + arch;
  // --fmad=false: NVRTC contracts a*b+c into an FMA by default; the interpreter
  // kernels (nvcc -fmad=false) and every host build do not (runtime/CMakeLists.txt).
  const char *options[] = {option.c_str(), "-std=c++17", "--fmad=false"};
  rc = a.compileProgram(program, 3, options);
  size_t logBytes = 0;
  a.logSize(program, &logBytes);
  std::string log(logBytes, '\0');
  if (logBytes)
    a.log(program, log.data());
  std::string binary;
  if (rc == NVRTC_SUCCESS) {
    size_t bytes = 0;
    a.cubinSize(program, &bytes);
    binary.resize(bytes);
    a.cubin(program, binary.data());
  }
  a.destroyProgram(&program);
  ZRT_CHECK(rc == NVRTC_SUCCESS && !binary.empty(),
            "NVRTC could not compile the generated fused kernels for "
                << arch << " (" << a.error(rc) << "); run with "
                << "--fused-kernels=interpreter, and report this with its log:\n"
                << log.substr(0, 4000));
  return binary;
}

std::string GeneratedKernels::translationUnit(const std::vector<FusedKernelSource> &kernels,
                                              size_t *distinct) {
  // The headers parsed once, each distinct kernel once.
  std::string source = "#include \"FusedMath.h\"\n";
  std::map<std::string, bool> seen;
  for (const FusedKernelSource &k : kernels)
    if (!seen[k.name]) {
      seen[k.name] = true;
      source += k.source;
    }
  if (distinct)
    *distinct = seen.size();
  return source;
}

std::string GeneratedKernels::nvrtcLibrary() {
  const Nvrtc &a = nvrtc();
  int major = 0, minor = 0;
  a.version(&major, &minor);
  return std::to_string(major) + "." + std::to_string(minor) + " " + a.library;
}

GeneratedKernels::GeneratedKernels(bool quiet) : quiet_(quiet) {}

GeneratedKernels::~GeneratedKernels() {
  for (auto &m : modules_)
    if (m->module)
      driver().unload(m->module);
}

std::string GeneratedKernels::cacheFolder() {
  if (const char *dir = std::getenv("ZERO_KERNEL_CACHE"))
    return dir;
  if (const char *xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg)
    return std::string(xdg) + "/zero-opt/kernels";
  if (const char *home = std::getenv("HOME"); home && *home)
    return std::string(home) + "/.cache/zero-opt/kernels";
  return "";
}

std::shared_ptr<GeneratedKernels::Kernel> GeneratedKernels::add(const FusedKernelSource &k) {
  auto kernel = std::make_shared<Kernel>();
  kernel->source = k;
  pending_.push_back(kernel);
  return kernel;
}

size_t GeneratedKernels::loaded() const { return loaded_; }

void GeneratedKernels::compile() {
  if (pending_.empty())
    return;
  std::vector<FusedKernelSource> sources;
  for (const auto &k : pending_)
    sources.push_back(k->source);
  size_t distinct = 0;
  std::string source = translationUnit(sources, &distinct);
  const Driver &a = driver();
  int major = 0, minor = 0;
  nvrtc().version(&major, &minor);
  std::string arch = architecture();
  std::string version = std::to_string(major) + "." + std::to_string(minor);
  // What the binary is compiled from: the key names it, the cache file holds it.
  std::string compiledFrom = source + "\n// " + arch + " nvrtc " + version;
  char hash[20];
  std::snprintf(hash, sizeof hash, "%016llx", (unsigned long long)sourceHash(compiledFrom));
  std::string key = std::string(hash) + "-" + arch;

  std::unique_lock<std::mutex> lock(compiledMutex);
  std::string &binary = compiled[key];
  std::string folder = cacheFolder(), path = folder.empty() ? "" : folder + "/" + key + ".bin";
  bool fromCache = false;
  std::string unreadable; // why the file under the key cannot be read: then not cached
  struct stat st;
  if (binary.empty() && !path.empty() && ::stat(path.c_str(), &st) == 0) {
    // Read as every input is: a regular file of bounded size, without blocking
    // (a fifo there hung the run; a link to /dev/zero read 2 GB). What is not one
    // is left as it is, and nothing is cached in its place.
    std::string bytes, error, why;
    if (!S_ISREG(st.st_mode) ||
        !readInputFile(path, "kernel cache file", kMaxCacheFileBytes, bytes, error)) {
      unreadable = S_ISREG(st.st_mode) ? error : "not a regular file";
      std::fprintf(stderr, "zero-run: the cached kernels %s cannot be read (%s); compiling "
                           "them again, not caching them\n", path.c_str(), unreadable.c_str());
    } else {
      binary = binaryOf(bytes, compiledFrom, why);
      fromCache = !binary.empty();
      if (!fromCache)
        std::fprintf(stderr, "zero-run: the cached kernels %s are %s; compiling them again\n",
                     path.c_str(), why.c_str());
    }
  }
  auto load = [&](CUmodule &m) { return a.loadData(&m, binary.data()); };
  CUmodule module = nullptr;
  CUresult rc = binary.empty() ? CUDA_ERROR_INVALID_IMAGE : load(module);
  if (rc != CUDA_SUCCESS) {
    if (fromCache)
      std::fprintf(stderr, "zero-run: the cached kernels %s do not load (%s); compiling "
                           "them again\n", path.c_str(), cuMessage(rc).c_str());
    auto start = std::chrono::steady_clock::now();
    binary = compileSource(source, arch);
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::string cached;
    if (!unreadable.empty()) {
      cached = ", not cached (" + path + ": " + unreadable + ")";
    } else if (!path.empty()) {
      std::string error;
      // The source beside the binary, for whoever reads a kernel or a profile.
      std::error_code made;
      std::filesystem::create_directories(folder, made);
      if (!made && writeFileAtomically(path, cacheFile(compiledFrom, binary), error) &&
          writeFileAtomically(folder + "/" + key + ".cu", source, error))
        cached = ", cached in " + folder;
      else
        cached = ", not cached (" + (made ? "cannot make " + folder : error) + ")";
    }
    if (!quiet_)
      std::fprintf(stderr, "zero-run: compiled %zu generated kernels for %zu fused programs "
                         "for %s with NVRTC %s in %.1f s%s\n",
                 distinct, pending_.size(), arch.c_str(), version.c_str(), seconds,
                 cached.c_str());
    rc = load(module);
    ZRT_CHECK(rc == CUDA_SUCCESS, "the generated fused kernels, compiled for "
                                      << arch << ", do not load: " << cuMessage(rc));
  }
  lock.unlock();
  modules_.push_back(std::make_unique<Module>());
  modules_.back()->module = module;
  for (const auto &k : pending_) {
    rc = a.getFunction(&k->function, module, k->source.name.c_str());
    ZRT_CHECK(rc == CUDA_SUCCESS, "the generated kernel " << k->source.name
                                                          << " is missing from its module: "
                                                          << cuMessage(rc));
    ++loaded_;
  }
  pending_.clear();
}

void GeneratedKernels::launch(const Kernel &k, cudaStream_t s, const uint64_t *params) {
  if (!k.function)
    compile();
  int64_t blocks = (k.source.threads + 255) / 256;
  if (blocks == 0)
    return;
  void *args[fused::kMaxInputs + 2];
  int count = 0;
  for (; count < fused::kMaxInputs + 2 && k.source.params > count; ++count)
    args[count] = const_cast<uint64_t *>(&params[count]);
  CUresult rc = driver().launchKernel(k.function, (unsigned)blocks, 1, 1, 256, 1, 1, 0,
                                   (CUstream)s, args, nullptr);
  ZRT_CHECK(rc == CUDA_SUCCESS, "launching the generated kernel " << k.source.name << ": "
                                                                   << cuMessage(rc));
  cudaError_t launched = cudaGetLastError();
  if (launched != cudaSuccess)
    checkCuda(launched, ("launching the generated kernel " + k.source.name).c_str());
}
