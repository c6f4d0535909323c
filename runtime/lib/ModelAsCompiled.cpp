//===- ModelAsCompiled.cpp - An ONNX model as the compiler reads it ------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#include "zrt/ModelAsCompiled.h"
#include "zrt/FoldedTransposes.h"
#include "zrt/MergedParameters.h"
#include "zrt/OnnxTensors.h"
#include "zrt/ParameterInputs.h"

onnx::ModelProto zrt::readModelAsCompiled(const std::string &path) {
  onnx::ModelProto model = readOnnxModel(path);
  size_t slash = path.rfind('/');
  unfoldTransposedCopies(model, slash == std::string::npos ? "." : path.substr(0, slash));
  splitMergedParameters(model);
  parametersFromInputs(model);
  return model;
}
