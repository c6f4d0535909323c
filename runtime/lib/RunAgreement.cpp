//===- RunAgreement.cpp - What every rank of a run must agree on ----------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#include "zrt/RunAgreement.h"
#include "zrt/Error.h"
#include "zrt/ExternalData.h"
#include "zplan/PlanFormat.h"

#include <cstring>

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
                                     const std::string &modelDir) {
  uint64_t h = kFnvOffsetBasis;
  for (const auto &t : model.graph().initializer()) {
    // The proto itself (name, type, shape, inline values, where external data is),
    // then the external bytes it points to.
    std::string proto = t.SerializeAsString();
    h = contentHash(proto.data(), proto.size(), h);
    if (t.data_location() == onnx::TensorProto::EXTERNAL) {
      std::string bytes = readExternalData(t, modelDir, "initializer '" + t.name() + "'");
      h = contentHash(bytes.data(), bytes.size(), h);
    }
  }
  return h;
}
