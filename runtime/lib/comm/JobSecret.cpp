//===- JobSecret.cpp - Ranks that prove they belong to the job -------------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#include "JobSecret.h"

#include "zrt/Error.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#include <cstring>
#include <vector>

using namespace zrt;
using namespace zrt::tcp;

Nonce zrt::tcp::freshNonce() {
  Nonce n;
  ZRT_CHECK(RAND_bytes(n.data(), (int)n.size()) == 1,
            "cannot draw a random nonce for the rendezvous (OpenSSL's RAND_bytes failed)");
  return n;
}

Proof zrt::tcp::proofOf(const std::string &secret, const char *role, const void *hello,
                        size_t helloBytes, const Nonce &acceptorNonce) {
  std::vector<uint8_t> message(role, role + std::strlen(role) + 1);
  const uint8_t *h = static_cast<const uint8_t *>(hello);
  message.insert(message.end(), h, h + helloBytes);
  message.insert(message.end(), acceptorNonce.begin(), acceptorNonce.end());
  Proof out{};
  size_t length = 0;
  ZRT_CHECK(EVP_Q_mac(nullptr, "HMAC", nullptr, "SHA256", nullptr, secret.data(), secret.size(),
                      message.data(), message.size(), out.data(), out.size(), &length) &&
                length == out.size(),
            "cannot compute the rendezvous's HMAC-SHA256 (OpenSSL's EVP_Q_mac failed)");
  return out;
}

bool zrt::tcp::sameProof(const Proof &a, const Proof &b) {
  return CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}
