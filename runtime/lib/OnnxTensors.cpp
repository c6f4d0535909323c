//===- OnnxTensors.cpp - ONNX TensorProto in and out of the runtime -------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#include "zrt/OnnxTensors.h"
#include "zrt/Error.h"
#include "zrt/InputFile.h"
#include "zrt/ExternalData.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include <cstring>
#include <fstream>
#include <sstream>

using namespace zrt;
using onnx::TensorProto;

static std::string readFile(const std::string &path, const char *what) {
  return readInputFile(path, what, kMaxProtobufBytes);
}

template <typename Msg>
static void parseLarge(Msg &msg, const std::string &bytes, const std::string &path,
                       const char *what) {
  google::protobuf::io::ArrayInputStream raw(bytes.data(), (int)bytes.size());
  google::protobuf::io::CodedInputStream coded(&raw);
  coded.SetTotalBytesLimit(INT32_MAX);
  ZRT_CHECK(msg.ParseFromCodedStream(&coded) && coded.ConsumedEntireMessage(),
            "'" << path << "' is not a valid " << what);
}

onnx::ModelProto zrt::readOnnxModel(const std::string &path) {
  onnx::ModelProto model;
  parseLarge(model, readFile(path, "ONNX model"), path, "ONNX model");
#ifdef ZERO_DEBIAN_ONNX
  // Newer IR versions hold fields (metadata_props) that ONNX 1.12 drops unread.
  ZRT_CHECK(model.ir_version() <= onnx::IR_VERSION,
            "'" << path << "' has ONNX IR version " << model.ir_version()
                << "; this build links Debian's ONNX 1.12, which reads IR version "
                << onnx::IR_VERSION << " at most (utils/setup.sh builds the tools with "
                << "the ONNX release that reads every version)");
#endif
  return model;
}

onnx::TensorProto zrt::readTensorFile(const std::string &path) {
  TensorProto t;
  parseLarge(t, readFile(path, "tensor file"), path, "ONNX TensorProto");
  return t;
}

void zrt::copyTensorInto(const TensorProto &t, const TensorView &dst,
                         const std::string &what, const std::string &baseDir) {
  copyTensorRangeInto(t, dst, 0, dst.numel(), dst.data, what, baseDir);
}

void zrt::copyTensorRangeInto(const TensorProto &t, const TensorView &whole,
                              int64_t first, int64_t count, void *dst,
                              const std::string &what, const std::string &baseDir) {
  DType dt = dtypeFromOnnx(t.data_type());
  // A float stored in another float type (a bf16 export's weights in an f32
  // plan, f32 weights in a bf16 plan's 16-bit copy) is converted as it is read,
  // rounded to nearest even.
  bool convert = dt != whole.dtype && isFloatDtype(dt) && isFloatDtype(whole.dtype);
  ZRT_CHECK(dt == whole.dtype || convert,
            what << " has ONNX type "
                 << TensorProto::DataType_Name((TensorProto::DataType)t.data_type())
                 << ", the plan expects " << dtypeName(whole.dtype));
  std::vector<int64_t> shape(t.dims().begin(), t.dims().end());
  TensorView have{nullptr, dt, shape};
  ZRT_CHECK(shape == whole.shape, what << " has shape " << have.describe()
                                       << ", the plan expects " << whole.describe());
  int64_t n = whole.numel(), size = dtypeSize(dt);
  ZRT_CHECK(first >= 0 && count >= 0 && first <= n && count <= n - first,
            what << ": elements [" << first << ", " << first + count
                 << ") lie outside its " << n);
  std::vector<char> stored;
  if (convert)
    stored.resize(count * size);
  char *out = convert ? stored.data() : static_cast<char *>(dst);
  if (t.data_location() == TensorProto::EXTERNAL) {
    ExternalSpan span = resolveExternalData(t, baseDir, what);
    ZRT_CHECK(span.length == n * size, what << ": external data has " << span.length
                                            << " bytes, expected " << n * size);
    readExternalRange(span, first * size, count * size, out, what);
  } else if (t.has_raw_data()) {
    ZRT_CHECK((int64_t)t.raw_data().size() == n * size,
              what << ": raw_data has " << t.raw_data().size() << " bytes, expected "
                   << n * size);
    std::memcpy(out, t.raw_data().data() + first * size, count * size);
  } else {
    auto need = [&](int64_t have) {
      ZRT_CHECK(have == n, what << " holds " << have << " values, expected " << n);
    };
    switch (t.data_type()) {
    case TensorProto::FLOAT:
      need(t.float_data_size());
      std::memcpy(out, t.float_data().data() + first, count * 4);
      break;
    case TensorProto::DOUBLE:
      need(t.double_data_size());
      std::memcpy(out, t.double_data().data() + first, count * 8);
      break;
    case TensorProto::INT64:
      need(t.int64_data_size());
      std::memcpy(out, t.int64_data().data() + first, count * 8);
      break;
    case TensorProto::INT32:
      need(t.int32_data_size());
      std::memcpy(out, t.int32_data().data() + first, count * 4);
      break;
    case TensorProto::BFLOAT16:
    case TensorProto::FLOAT16: // 16-bit patterns, one per int32_data element
      need(t.int32_data_size());
      for (int64_t i = 0; i < count; ++i) {
        uint16_t bits = (uint16_t)t.int32_data(first + i);
        std::memcpy(out + 2 * i, &bits, 2);
      }
      break;
    default: // one-byte types are stored widened in int32_data
      need(t.int32_data_size());
      for (int64_t i = 0; i < count; ++i)
        out[i] = (char)t.int32_data(first + i);
    }
  }
  if (convert) {
    char *to = static_cast<char *>(dst);
    int64_t toSize = dtypeSize(whole.dtype);
    for (int64_t i = 0; i < count; ++i)
      storeFloatValue(to + i * toSize, whole.dtype, floatValue(out + i * size, dt));
  }
  if (dt == zero::zplan::BOOL) // kernels rely on bools being exactly 0 or 1
    for (int64_t i = 0; i < count; ++i)
      out[i] = out[i] != 0;
}

TensorProto zrt::tensorFromView(const TensorView &v, const std::string &name) {
  TensorProto t;
  t.set_name(name);
  t.set_data_type(onnxFromDtype(v.dtype));
  for (int64_t d : v.shape)
    t.add_dims(d);
  t.set_raw_data(v.data, v.bytes());
  return t;
}
