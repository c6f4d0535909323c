//===- JobSecret.h - Ranks that prove they belong to the job ----*- C++ -*-===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// Ranks launched without mpirun meet over TCP, where anyone who reaches the port
// could say "rank 1 of 2". Every rank of the job holds the same secret
// (ZERO_RUN_SECRET); each connection, the rendezvous's and the mesh's, starts
// with a challenge and response over it (HMAC-SHA256 of the hello and a fresh
// nonce from each side), so each end proves it holds the secret without sending
// it. What is proven is only that: the connections are neither encrypted nor
// authenticated after their start (docs/UserGuide.md, "Who can join a launch").
//
//===----------------------------------------------------------------------===//

#ifndef ZRT_COMM_JOBSECRET_H
#define ZRT_COMM_JOBSECRET_H

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

namespace zrt::tcp {

using Nonce = std::array<uint8_t, 32>;
using Proof = std::array<uint8_t, 32>;

/// 32 bytes from the system's random source.
Nonce freshNonce();

/// HMAC-SHA256 under `secret` of `role` ("acceptor" or "initiator": neither side's
/// answer serves as the other's), the initiator's hello (which holds its nonce)
/// and the acceptor's nonce.
Proof proofOf(const std::string &secret, const char *role, const void *hello,
              size_t helloBytes, const Nonce &acceptorNonce);

/// Compares in constant time.
bool sameProof(const Proof &a, const Proof &b);

} // namespace zrt::tcp

#endif // ZRT_COMM_JOBSECRET_H
