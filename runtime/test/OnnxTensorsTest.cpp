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
#include <sys/stat.h>
#include <unistd.h>

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

/// A fresh folder `model/` inside gtest's temporary folder, with `outside.bin`
/// beside it (outside the model's folder).
std::string modelFolder() {
  std::string root = ::testing::TempDir() + "/zrt-external-" + std::to_string(::getpid());
  ::mkdir(root.c_str(), 0755);
  ::mkdir((root + "/model").c_str(), 0755);
  ::mkdir((root + "/model/sub").c_str(), 0755);
  std::ofstream(root + "/outside.bin", std::ios::binary) << std::string(8, 'x');
  ::unlink((root + "/model/link.bin").c_str());
  EXPECT_EQ(::symlink((root + "/outside.bin").c_str(), (root + "/model/link.bin").c_str()), 0);
  return root + "/model";
}

onnx::TensorProto withKey(onnx::TensorProto t, const std::string &key,
                          const std::string &value) {
  for (auto &kv : *t.mutable_external_data())
    if (kv.key() == key) {
      kv.set_value(value);
      return t;
    }
  auto *kv = t.add_external_data();
  kv->set_key(key);
  kv->set_value(value);
  return t;
}

TEST(OnnxTensors, ExternalDataStaysInTheModelFolder) {
  std::string dir = modelFolder();
  EXPECT_NE(errorOf(externalTensor("../outside.bin"), dir).find("outside the model's folder"),
            std::string::npos);
  EXPECT_NE(errorOf(externalTensor("sub/../../outside.bin"), dir)
                .find("outside the model's folder"),
            std::string::npos);
  // A symbolic link inside the folder that points out of it.
  EXPECT_NE(errorOf(externalTensor("link.bin"), dir).find("outside the model's folder"),
            std::string::npos);
  EXPECT_NE(errorOf(externalTensor("/etc/passwd"), dir).find("is an absolute path"),
            std::string::npos);
  EXPECT_NE(errorOf(externalTensor("sub"), dir).find("is a folder, not a regular file"),
            std::string::npos);
  // A fifo is refused without waiting for a writer (opening it blocked before).
  ::unlink((dir + "/pipe").c_str());
  ASSERT_EQ(::mkfifo((dir + "/pipe").c_str(), 0600), 0);
  EXPECT_NE(errorOf(externalTensor("pipe"), dir).find("is a fifo, not a regular file"),
            std::string::npos);
}

TEST(OnnxTensors, ExternalDataOffsetsAreStrictIntegers) {
  std::string dir = modelFolder();
  std::ofstream(dir + "/w.bin", std::ios::binary) << std::string(8, 'x');
  for (const char *bad : {"abc", "-4", "4x", " 4", "", "99999999999999999999"})
    EXPECT_NE(errorOf(withKey(externalTensor("w.bin"), "offset", bad), dir)
                  .find("external data offset '" + std::string(bad) +
                        "' is not a non-negative decimal integer"),
              std::string::npos)
        << bad;
  // Each fits int64, their sum does not: still "outside", not an overflow.
  auto huge = withKey(withKey(externalTensor("w.bin"), "offset", "9223372036854775807"),
                      "length", "9223372036854775807");
  EXPECT_NE(errorOf(huge, dir).find("lies outside"), std::string::npos);
  EXPECT_NE(errorOf(withKey(externalTensor("w.bin"), "length", "x"), dir)
                .find("external data length 'x'"),
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
