//===- CudnnEmulatorTest.cpp - The emulated cuDNN graph API ---------------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
// The emulator interprets the operation graphs the backend builds (fused
// attention), so its meaning of each operation, stride and mask must be cuDNN's,
// and it must refuse what cuDNN refuses: a virtual tensor nobody writes, a variant
// pack without a tensor, a pointer below the declared alignment.
//
//===----------------------------------------------------------------------===//

#include <cuda_runtime.h>
#include <cudnn.h>

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace {

using Desc = cudnnBackendDescriptor_t;

/// Descriptors made in a test, destroyed with it.
struct Graph {
  std::vector<Desc> made, ops;
  ~Graph() {
    for (auto it = made.rbegin(); it != made.rend(); ++it)
      cudnnBackendDestroyDescriptor(*it);
  }
  Desc make(cudnnBackendDescriptorType_t type) {
    Desc d = nullptr;
    EXPECT_EQ(cudnnBackendCreateDescriptor(type, &d), CUDNN_STATUS_SUCCESS);
    made.push_back(d);
    return d;
  }
  static void set(Desc d, cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type,
                  int64_t n, const void *v) {
    EXPECT_EQ(cudnnBackendSetAttribute(d, name, type, n, v), CUDNN_STATUS_SUCCESS);
  }
  static void setDesc(Desc d, cudnnBackendAttributeName_t name, Desc v) {
    set(d, name, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &v);
  }
  Desc tensor(int64_t uid, cudnnDataType_t type, std::vector<int64_t> dims,
              std::vector<int64_t> strides, bool isVirtual = false, bool byValue = false) {
    Desc t = make(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
    int64_t align = 16;
    set(t, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &type);
    set(t, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, (int64_t)dims.size(), dims.data());
    set(t, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, (int64_t)strides.size(), strides.data());
    set(t, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid);
    set(t, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &align);
    set(t, CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &isVirtual);
    set(t, CUDNN_ATTR_TENSOR_IS_BY_VALUE, CUDNN_TYPE_BOOLEAN, 1, &byValue);
    EXPECT_EQ(cudnnBackendFinalize(t), CUDNN_STATUS_SUCCESS);
    return t;
  }
  void pointwise(cudnnPointwiseMode_t mode, Desc x, Desc b, Desc t, Desc y, int64_t axis = 0) {
    Desc pw = make(CUDNN_BACKEND_POINTWISE_DESCRIPTOR);
    cudnnDataType_t f32 = CUDNN_DATA_FLOAT;
    set(pw, CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &mode);
    set(pw, CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, 1, &f32);
    if (mode == CUDNN_POINTWISE_GEN_INDEX)
      set(pw, CUDNN_ATTR_POINTWISE_AXIS, CUDNN_TYPE_INT64, 1, &axis);
    EXPECT_EQ(cudnnBackendFinalize(pw), CUDNN_STATUS_SUCCESS);
    Desc op = make(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR);
    setDesc(op, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, pw);
    setDesc(op, CUDNN_ATTR_OPERATION_POINTWISE_XDESC, x);
    if (b)
      setDesc(op, CUDNN_ATTR_OPERATION_POINTWISE_BDESC, b);
    if (t)
      setDesc(op, CUDNN_ATTR_OPERATION_POINTWISE_TDESC, t);
    setDesc(op, CUDNN_ATTR_OPERATION_POINTWISE_YDESC, y);
    EXPECT_EQ(cudnnBackendFinalize(op), CUDNN_STATUS_SUCCESS);
    ops.push_back(op);
  }
  void reduceMax(Desc x, Desc y) {
    Desc red = make(CUDNN_BACKEND_REDUCTION_DESCRIPTOR);
    cudnnDataType_t f32 = CUDNN_DATA_FLOAT;
    cudnnReduceTensorOp_t op = CUDNN_REDUCE_TENSOR_MAX;
    set(red, CUDNN_ATTR_REDUCTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &f32);
    set(red, CUDNN_ATTR_REDUCTION_OPERATOR, CUDNN_TYPE_REDUCTION_OPERATOR_TYPE, 1, &op);
    EXPECT_EQ(cudnnBackendFinalize(red), CUDNN_STATUS_SUCCESS);
    Desc o = make(CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR);
    setDesc(o, CUDNN_ATTR_OPERATION_REDUCTION_XDESC, x);
    setDesc(o, CUDNN_ATTR_OPERATION_REDUCTION_YDESC, y);
    setDesc(o, CUDNN_ATTR_OPERATION_REDUCTION_DESC, red);
    EXPECT_EQ(cudnnBackendFinalize(o), CUDNN_STATUS_SUCCESS);
    ops.push_back(o);
  }
  void matmul(Desc a, Desc b, Desc c) {
    Desc mm = make(CUDNN_BACKEND_MATMUL_DESCRIPTOR);
    cudnnDataType_t f32 = CUDNN_DATA_FLOAT;
    set(mm, CUDNN_ATTR_MATMUL_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &f32);
    EXPECT_EQ(cudnnBackendFinalize(mm), CUDNN_STATUS_SUCCESS);
    Desc o = make(CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR);
    setDesc(o, CUDNN_ATTR_OPERATION_MATMUL_ADESC, a);
    setDesc(o, CUDNN_ATTR_OPERATION_MATMUL_BDESC, b);
    setDesc(o, CUDNN_ATTR_OPERATION_MATMUL_CDESC, c);
    setDesc(o, CUDNN_ATTR_OPERATION_MATMUL_DESC, mm);
    EXPECT_EQ(cudnnBackendFinalize(o), CUDNN_STATUS_SUCCESS);
    ops.push_back(o);
  }
  /// The finalized graph's execution plan, through the heuristic; or the status
  /// of the graph's finalize.
  cudnnStatus_t plan(cudnnHandle_t handle, Desc &plan) {
    Desc g = make(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
    set(g, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle);
    set(g, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, (int64_t)ops.size(),
        ops.data());
    if (cudnnStatus_t s = cudnnBackendFinalize(g))
      return s;
    Desc heur = make(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
    setDesc(heur, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, g);
    cudnnBackendHeurMode_t mode = CUDNN_HEUR_MODE_A;
    set(heur, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode);
    EXPECT_EQ(cudnnBackendFinalize(heur), CUDNN_STATUS_SUCCESS);
    int64_t n = 0;
    EXPECT_EQ(cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                       CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &n, nullptr),
              CUDNN_STATUS_SUCCESS);
    EXPECT_EQ(n, 1);
    Desc cfg = make(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR);
    EXPECT_EQ(cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                       CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &n, &cfg),
              CUDNN_STATUS_SUCCESS);
    plan = make(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
    set(plan, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle);
    setDesc(plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, cfg);
    return cudnnBackendFinalize(plan);
  }
  Desc pack(std::vector<int64_t> uids, std::vector<void *> pointers, void *workspace) {
    Desc p = make(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
    set(p, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, (int64_t)uids.size(),
        uids.data());
    set(p, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR,
        (int64_t)pointers.size(), pointers.data());
    set(p, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &workspace);
    EXPECT_EQ(cudnnBackendFinalize(p), CUDNN_STATUS_SUCCESS);
    return p;
  }
};

std::string lastError() {
  char message[512];
  cudnnGetLastErrorString(message, sizeof message);
  return message;
}

// A causal mask and a row maximum, and a product with a transposed operand read by
// strides: the attention graph's parts, interpreted on the handle's stream.
TEST(CudnnEmulator, GraphsRunOnTheStream) {
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  cudaStream_t s;
  ASSERT_EQ(cudaStreamCreate(&s), cudaSuccess);
  cudnnHandle_t handle;
  ASSERT_EQ(cudnnCreate(&handle), CUDNN_STATUS_SUCCESS);
  ASSERT_EQ(cudnnSetStream(handle, s), CUDNN_STATUS_SUCCESS);
  float *x, *rowMax, *product;
  void *workspace;
  ASSERT_EQ(cudaMalloc(&x, 6 * sizeof(float)), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&rowMax, 8 * sizeof(float)), cudaSuccess); // room for the misaligned case
  ASSERT_EQ(cudaMalloc(&product, 4 * sizeof(float)), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&workspace, 4096), cudaSuccess);
  const float values[6] = {1, 5, 2, 4, 0, 3}; // [1, 1, 2, 3]
  ASSERT_EQ(cudaMemcpy(x, values, sizeof values, cudaMemcpyHostToDevice), cudaSuccess);

  Graph g;
  Desc tx = g.tensor(1, CUDNN_DATA_FLOAT, {1, 1, 2, 3}, {6, 6, 3, 1});
  Desc txT = g.tensor(2, CUDNN_DATA_FLOAT, {1, 1, 3, 2}, {6, 6, 1, 3}); // x read transposed
  Desc ty = g.tensor(3, CUDNN_DATA_FLOAT, {1, 1, 2, 1}, {2, 2, 1, 1});
  Desc tp = g.tensor(4, CUDNN_DATA_FLOAT, {1, 1, 2, 2}, {4, 4, 2, 1});
  Desc low = g.tensor(5, CUDNN_DATA_FLOAT, {1, 1, 1, 1}, {1, 1, 1, 1}, false, true);
  Desc row = g.tensor(10, CUDNN_DATA_INT32, {1, 1, 2, 3}, {6, 6, 3, 1}, true);
  Desc col = g.tensor(11, CUDNN_DATA_INT32, {1, 1, 2, 3}, {6, 6, 3, 1}, true);
  Desc keep = g.tensor(12, CUDNN_DATA_BOOLEAN, {1, 1, 2, 3}, {6, 6, 3, 1}, true);
  Desc masked = g.tensor(13, CUDNN_DATA_FLOAT, {1, 1, 2, 3}, {6, 6, 3, 1}, true);
  g.pointwise(CUDNN_POINTWISE_GEN_INDEX, tx, nullptr, nullptr, row, 2);
  g.pointwise(CUDNN_POINTWISE_GEN_INDEX, tx, nullptr, nullptr, col, 3);
  g.pointwise(CUDNN_POINTWISE_CMP_GE, row, col, nullptr, keep);
  g.pointwise(CUDNN_POINTWISE_BINARY_SELECT, tx, low, keep, masked);
  g.reduceMax(masked, ty);
  g.matmul(tx, txT, tp);
  Desc plan;
  ASSERT_EQ(g.plan(handle, plan), CUDNN_STATUS_SUCCESS);
  int64_t bytes = 0, n = 0;
  ASSERT_EQ(cudnnBackendGetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE,
                                     CUDNN_TYPE_INT64, 1, &n, &bytes),
            CUDNN_STATUS_SUCCESS);
  EXPECT_GT(bytes, 0);
  float lowest = -100;
  Desc pack = g.pack({1, 2, 3, 4, 5}, {x, x, rowMax, product, &lowest}, workspace);
  ASSERT_EQ(cudnnBackendExecute(handle, plan, pack), CUDNN_STATUS_SUCCESS);
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  // Row 0 keeps column 0, row 1 columns 0 and 1 (row >= column).
  EXPECT_EQ(rowMax[0], 1.0f);
  EXPECT_EQ(rowMax[1], 4.0f);
  const float xxT[4] = {30, 10, 10, 25};
  for (int i = 0; i < 4; ++i)
    EXPECT_EQ(product[i], xxT[i]) << i;

  // A pack without the product's tensor, and a pointer below the declared
  // alignment, are refused before anything is queued.
  Desc missing = g.pack({1, 2, 3, 5}, {x, x, rowMax, &lowest}, workspace);
  EXPECT_EQ(cudnnBackendExecute(handle, plan, missing), CUDNN_STATUS_BAD_PARAM);
  EXPECT_NE(lastError().find("no tensor 4"), std::string::npos);
  Desc unaligned = g.pack({1, 2, 3, 4, 5}, {x, x, rowMax + 1, product, &lowest}, workspace);
  EXPECT_EQ(cudnnBackendExecute(handle, plan, unaligned), CUDNN_STATUS_BAD_PARAM);
  EXPECT_NE(lastError().find("aligned"), std::string::npos);
  // A finalized descriptor takes no more attributes.
  int64_t uid = 9;
  EXPECT_NE(cudnnBackendSetAttribute(tx, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid),
            CUDNN_STATUS_SUCCESS);

  cudnnDestroy(handle);
  cudaFree(x);
  cudaFree(rowMax);
  cudaFree(product);
  cudaFree(workspace);
  cudaStreamDestroy(s);
}

TEST(CudnnEmulator, AGraphReadingAnUnwrittenVirtualTensorIsRefused) {
  cudnnHandle_t handle;
  ASSERT_EQ(cudnnCreate(&handle), CUDNN_STATUS_SUCCESS);
  Graph g;
  Desc nowhere = g.tensor(10, CUDNN_DATA_FLOAT, {1, 1, 2, 3}, {6, 6, 3, 1}, true);
  Desc y = g.tensor(3, CUDNN_DATA_FLOAT, {1, 1, 2, 1}, {2, 2, 1, 1});
  g.reduceMax(nowhere, y);
  Desc plan;
  EXPECT_EQ(g.plan(handle, plan), CUDNN_STATUS_BAD_PARAM);
  EXPECT_NE(lastError().find("never written"), std::string::npos);
  cudnnDestroy(handle);
}

} // namespace
