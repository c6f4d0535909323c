//===- PlanFormat.h - The .zplan container: header and checksum --*- C++ -*-===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// Header-only so that both the compiler (writer) and the runtime (reader) use the
// same definition without the runtime depending on the compiler. The layout is
// documented in include/zplan/zplan.proto.
//
//===----------------------------------------------------------------------===//

#ifndef ZPLAN_PLANFORMAT_H
#define ZPLAN_PLANFORMAT_H

#include <cstdint>
#include <string>

namespace zrt {

inline constexpr char kPlanMagic[8] = {'Z', 'E', 'R', 'O', 'P', 'L', 'A', 'N'};
inline constexpr uint32_t kPlanVersion = 6; // 2: kernel kinds are an enum; 3: strided matmul
                                            // views; 4: gelu (fused opcodes renumbered);
                                            // 5: strided attention views; 6: gelu_tanh
                                            // and matmul's GELU epilogues
inline constexpr size_t kPlanHeaderBytes = 32;

/// NVMe offload reads and writes with O_DIRECT, which needs file offsets, sizes
/// and memory addresses aligned to the device's logical block: every nvme buffer
/// starts at a multiple of this (4096 covers the common block sizes), and so do
/// the host buffers it is read into.
inline constexpr int64_t kNvmeAlignment = 4096;

inline constexpr uint64_t kFnvOffsetBasis = 0xcbf29ce484222325ull;

/// FNV-1a, 64 bit: cheap, dependency-free, and catches any flipped byte. `h`: the
/// hash of the bytes before these, to hash a file in pieces.
inline uint64_t fnv1a64(const void *data, size_t size, uint64_t h = kFnvOffsetBasis) {
  const auto *p = static_cast<const unsigned char *>(data);
  for (size_t i = 0; i < size; ++i) {
    h ^= p[i];
    h *= 0x100000001b3ull;
  }
  return h;
}

/// 16 lowercase hex digits (checksums in manifests and messages).
inline std::string hex64(uint64_t v) {
  static const char digits[] = "0123456789abcdef";
  std::string s(16, '0');
  for (int i = 15; i >= 0; --i, v >>= 4)
    s[i] = digits[v & 15];
  return s;
}

inline void putLE(std::string &out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i)
    out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

inline uint64_t getLE(const unsigned char *p, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i)
    v |= static_cast<uint64_t>(p[i]) << (8 * i);
  return v;
}

/// The 32-byte header for a serialized Plan `payload`.
inline std::string encodePlanHeader(const std::string &payload,
                                    uint32_t version = kPlanVersion) {
  std::string h(kPlanMagic, sizeof(kPlanMagic));
  putLE(h, version, 4);
  putLE(h, 0, 4);
  putLE(h, payload.size(), 8);
  putLE(h, fnv1a64(payload.data(), payload.size()), 8);
  return h;
}

} // namespace zrt

#endif // ZPLAN_PLANFORMAT_H
