//===- OnnxTensorsTest.cpp - Initializers and external data ---------------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#include "zrt/Error.h"
#include "zrt/OnnxTensors.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

using namespace zrt;

namespace {

onnx::TensorProto externalTensor(const std::string &location, int64_t offset = 0) {
  onnx::TensorProto t;
  t.set_name("w");
  t.set_data_type(onnx::TensorProto::FLOAT);
  t.add_dims(2);
  t.set_data_location(onnx::TensorProto::EXTERNAL);
  auto *kv = t.add_external_data();
  kv->set_key("location");
  kv->set_value(location);
  kv = t.add_external_data();
  kv->set_key("offset");
  kv->set_value(std::to_string(offset));
  return t;
}

std::string errorOf(const onnx::TensorProto &t, const std::string &dir) {
  float out[2] = {0, 0};
  TensorView dst{out, zero::zplan::F32, {2}};
  try {
    copyTensorInto(t, dst, "initializer 'w'", dir);
  } catch (const Error &e) {
    return e.what();
  }
  return "";
}

TEST(OnnxTensors, ExternalDataStaysInTheModelFolder) {
  EXPECT_NE(errorOf(externalTensor("../secret.bin"), "/tmp").find("leaves the model's folder"),
            std::string::npos);
  EXPECT_NE(errorOf(externalTensor("/etc/passwd"), "/tmp").find("leaves the model's folder"),
            std::string::npos);
}

TEST(OnnxTensors, ExternalDataIsReadAndRangeChecked) {
  std::string dir = ::testing::TempDir();
  {
    std::ofstream f(dir + "/w.bin", std::ios::binary);
    float v[3] = {1.5f, -2.0f, 7.0f};
    f.write(reinterpret_cast<const char *>(v), sizeof(v));
  }
  float out[2] = {0, 0};
  copyTensorInto(externalTensor("w.bin", 4), TensorView{out, zero::zplan::F32, {2}},
                 "initializer 'w'", dir);
  EXPECT_EQ(out[0], -2.0f);
  EXPECT_EQ(out[1], 7.0f);
  EXPECT_NE(errorOf(externalTensor("w.bin", 8), dir).find("external data has 4 bytes"),
            std::string::npos);
  EXPECT_NE(errorOf(externalTensor("w.bin", 100), dir).find("lies outside"),
            std::string::npos);
  EXPECT_NE(errorOf(externalTensor("missing.bin"), dir).find("cannot open external data"),
            std::string::npos);
  std::remove((dir + "/w.bin").c_str());
}

TEST(OnnxTensors, ShapeAndTypeMustMatchThePlan) {
  onnx::TensorProto t;
  t.set_data_type(onnx::TensorProto::FLOAT);
  t.add_dims(3);
  t.add_float_data(1);
  t.add_float_data(2);
  t.add_float_data(3);
  EXPECT_NE(errorOf(t, "").find("has shape f32[3], the plan expects f32[2]"),
            std::string::npos);
  t.set_data_type(onnx::TensorProto::INT64);
  EXPECT_NE(errorOf(t, "").find("has ONNX type INT64, the plan expects f32"),
            std::string::npos);
}

} // namespace
