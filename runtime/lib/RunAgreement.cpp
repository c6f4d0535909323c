//===- RunAgreement.cpp - What every rank of a run must agree on ----------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#include "zrt/RunAgreement.h"
#include "zrt/ParameterInputs.h"
#include "zrt/Error.h"
#include "zrt/ExternalData.h"
#include "zplan/PlanFormat.h"

#include <algorithm>
#include <cstring>
#include <vector>

using namespace zrt;

void zrt::agreeAcrossRanks(Communicator &comm, const std::vector<AgreedValue> &values) {
  for (const AgreedValue &v : values) {
    std::vector<int64_t> all = comm.allGatherInts(v.value);
    for (int r = 1; r < (int)all.size(); ++r) {
      if (all[r] == all[0])
        continue;
      std::ostringstream why;
      why << "the ranks disagree: rank " << r << "'s " << v.what;
      if (v.kind == AgreedValue::Number)
        why << " is " << all[r] << ", rank 0's " << all[0];
      else if (v.kind == AgreedValue::Flag)
        why << " is " << (all[r] ? "given" : "not given") << ", rank 0's "
            << (all[0] ? "is" : "is not");
      else
        why << " differs from rank 0's";
      why << " (each rank must be given the same)";
      throw AgreedError(why.str());
    }
  }
}

uint64_t zrt::contentHash(const void *data, size_t bytes, uint64_t seed) {
  const unsigned char *p = static_cast<const unsigned char *>(data);
  uint64_t h = kFnvOffsetBasis ^ seed;
  size_t i = 0;
  for (; i + 8 <= bytes; i += 8) {
    uint64_t w;
    std::memcpy(&w, p + i, 8);
    h = (h ^ w) * 0x100000001b3ull;
  }
  for (; i < bytes; ++i)
    h = (h ^ p[i]) * 0x100000001b3ull;
  return (h ^ bytes) * 0x100000001b3ull;
}

uint64_t zrt::initializerFingerprint(const onnx::ModelProto &model,
                                     const std::string &modelDir, bool externalBytes) {
  uint64_t h = kFnvOffsetBasis;
  std::vector<char> chunk;
  for (const auto &t : model.graph().initializer()) {
    // The proto itself (name, type, shape, inline values, where external data is),
    // then the external bytes it points to, a chunk at a time (a tensor may be
    // larger than the host's memory).
    std::string proto = t.SerializeAsString();
    h = contentHash(proto.data(), proto.size(), h);
    if (!externalBytes || t.data_location() != onnx::TensorProto::EXTERNAL ||
        hasNoValues(t))
      continue;
    std::string what = "initializer '" + t.name() + "'";
    ExternalSpan span = resolveExternalData(t, modelDir, what);
    constexpr int64_t kChunk = 64 << 20;
    chunk.resize(std::min(span.length, kChunk));
    for (int64_t at = 0; at < span.length; at += kChunk) {
      int64_t n = std::min(kChunk, span.length - at);
      readExternalRange(span, at, n, chunk.data(), what);
      h = contentHash(chunk.data(), n, h);
    }
  }
  return h;
}
