# Gradient-rule cases for utils/grad-check.py: one or more per op that has a rule.
# Each produces the double tensor Y from the weights in `params`; integer operands
# (indices, labels, axes, shapes) are Constant nodes.
C = "  {0} = Constant<value = int64[{1}] {{{2}}}>()".format


def case(name, nodes, params, positive=False, opset=17):
    return {"name": name, "nodes": nodes, "params": params, "positive": positive,
            "opset": opset}


CASES = [
    # Elementwise, with broadcasting in both directions.
    case("add_broadcast", ["  Y = Add(A, B)"], {"A": [2, 3], "B": [3]}),
    case("sub_broadcast", ["  Y = Sub(A, B)"], {"A": [3, 1], "B": [1, 4]}),
    case("mul_broadcast", ["  Y = Mul(A, B)"], {"A": [2, 3], "B": [2, 1]}),
    case("div_broadcast", ["  Y = Div(A, B)"], {"A": [2, 3], "B": [3]}, positive=True),
    case("pow_both", ["  Y = Pow(A, B)"], {"A": [2, 3], "B": [3]}, positive=True),
    case("pow_const_int", ["  e = Constant<value_int = 3>()", "  Y = Pow(A, e)"], {"A": [4]}),
    case("sqrt", ["  Y = Sqrt(A)"], {"A": [2, 3]}, positive=True),
    case("neg", ["  Y = Neg(A)"], {"A": [5]}),
    case("reciprocal", ["  Y = Reciprocal(A)"], {"A": [2, 3]}, positive=True),
    case("exp", ["  Y = Exp(A)"], {"A": [2, 3]}),
    case("log", ["  Y = Log(A)"], {"A": [2, 3]}, positive=True),
    case("relu", ["  Y = Relu(A)"], {"A": [2, 4]}),
    case("tanh", ["  Y = Tanh(A)"], {"A": [2, 3]}),
    case("sigmoid", ["  Y = Sigmoid(A)"], {"A": [2, 3]}),
    case("erf", ["  Y = Erf(A)"], {"A": [2, 3]}),
    case("softplus", ["  Y = Softplus(A)"], {"A": [2, 3]}),
    # Large inputs of both signs: the form that does not overflow.
    case("softplus_scaled", ["  k = Constant<value = double[1] {30.0}>()", "  s = Mul(A, k)",
                             "  Y = Softplus(s)"], {"A": [3, 4]}),
    # GELU as PyTorch exports it, x * (erf(x / sqrt 2) + 1) * 0.5: zero-opt makes
    # one compute.gelu of it, whose gradient is one compute.gelu_grad.
    case("gelu_erf_chain", ["  r = Constant<value = double[1] {1.4142135623730951}>()",
                            "  d = Div(A, r)", "  e = Erf(d)",
                            "  o = Constant<value = double[1] {1.0}>()", "  a = Add(e, o)",
                            "  m = Mul(A, a)", "  h = Constant<value = double[1] {0.5}>()",
                            "  Y = Mul(m, h)"], {"A": [3, 4]}),
    case("cast", ["  Y = Cast<to = 11>(A)"], {"A": [3]}),
    case("where", ["  c = Constant<value = bool[2,3] {1,0,1,0,0,1}>()", "  Y = Where(c, A, B)"],
         {"A": [2, 3], "B": [3]}),
    case("identity_dropout", ["  i = Identity(A)", "  Y = Dropout(i)"], {"A": [4]}),
    # Linear algebra, including 1-D operands and broadcast batches.
    case("matmul_2d", ["  Y = MatMul(A, B)"], {"A": [2, 3], "B": [3, 4]}),
    case("matmul_batched", ["  Y = MatMul(A, B)"], {"A": [2, 2, 3], "B": [3, 2]}),
    case("matmul_broadcast_batch", ["  Y = MatMul(A, B)"], {"A": [2, 1, 2, 3], "B": [3, 3, 2]}),
    case("matmul_vec_mat", ["  Y = MatMul(A, B)"], {"A": [3], "B": [2, 3, 2]}),
    case("matmul_mat_vec", ["  Y = MatMul(A, B)"], {"A": [2, 3], "B": [3]}),
    case("gemm", ["  Y = Gemm<alpha = 0.5, beta = 2.0, transA = 1, transB = 1>(A, B, C)"],
         {"A": [3, 2], "B": [4, 3], "C": [4]}),
    # Normalizations and the loss.
    case("softmax", ["  Y = Softmax<axis = 1>(A)"], {"A": [2, 3, 2]}),
    case("softmax_last_axis", ["  Y = Softmax(A)"], {"A": [3, 5]}),
    case("log_softmax", ["  Y = LogSoftmax(A)"], {"A": [2, 4]}),
    case("layer_norm", ["  Y = LayerNormalization(A, S, B)"], {"A": [2, 2, 4], "S": [4], "B": [4]}),
    case("layer_norm_axis1", ["  Y = LayerNormalization<axis = 1>(A, S, B)"],
         {"A": [2, 2, 3], "S": [2, 3], "B": [3]}),
    case("layer_norm_no_bias", ["  Y = LayerNormalization(A, S)"], {"A": [3, 4], "S": [4]}),
    case("sce_mean", [C("l", 3, "2, 0, 3"), "  Y = SoftmaxCrossEntropyLoss(A, l)"], {"A": [3, 4]}),
    case("sce_sum_spatial", [C("l", "2,2", "1, 0, 2, 1"),
                             "  Y = SoftmaxCrossEntropyLoss<reduction = \"sum\">(A, l)"],
         {"A": [2, 3, 2]}),
    case("sce_none_ignore", [C("l", 4, "1, 3, 0, 3"),
                             "  Y = SoftmaxCrossEntropyLoss<reduction = \"none\", ignore_index = 3>(A, l)"],
         {"A": [4, 3]}),
    case("sce_weights_mean", [C("l", 3, "1, 0, 1"), "  w = Constant<value = double[2] {0.3, 1.7}>()",
                              "  Y = SoftmaxCrossEntropyLoss(A, l, w)"], {"A": [3, 2]}),
    case("sce_log_prob", [C("l", 3, "1, 0, 1"), "  z, Y = SoftmaxCrossEntropyLoss(A, l)"],
         {"A": [3, 2]}),
    # Fused attention (ONNX's Attention becomes compute.attention): causal, grouped
    # query heads, a boolean padding mask, an additive mask, and a length that is
    # not a multiple of the CPU kernels' blocks (forward: 128 query rows, 512 keys;
    # backward: 64 and 128): at 300, three forward query blocks, and five query
    # and three key blocks backward, the last ones partial. (Several forward key
    # blocks: fused-attention.test, T = 1200.)
    case("attention_causal", ["  Y = Attention<is_causal = 1>(Q, K, V)"],
         {"Q": [1, 2, 5, 3], "K": [1, 2, 5, 3], "V": [1, 2, 5, 4]}, opset=23),
    case("attention_grouped_heads", ["  Y = Attention<scale = 0.7>(Q, K, V)"],
         {"Q": [2, 4, 3, 2], "K": [2, 2, 4, 2], "V": [2, 2, 4, 3]}, opset=23),
    case("attention_padding_mask",
         ["  m = Constant<value = bool[2,1,1,4] {1,1,1,0, 1,1,0,0}>()",
          "  Y = Attention<is_causal = 1>(Q, K, V, m)"],
         {"Q": [2, 2, 4, 2], "K": [2, 2, 4, 2], "V": [2, 2, 4, 2]}, opset=23),
    case("attention_additive_mask",
         ["  m = Constant<value = double[3,4] {0,-1,0.5,0, 0,0,-2,0, 1,0,0,-0.5}>()",
          "  Y = Attention(Q, K, V, m)"],
         {"Q": [1, 1, 3, 2], "K": [1, 1, 4, 2], "V": [1, 1, 4, 2]}, opset=23),
    case("attention_partial_blocks", ["  Y = Attention<is_causal = 1>(Q, K, V)"],
         {"Q": [1, 1, 300, 1], "K": [1, 1, 300, 1], "V": [1, 1, 300, 1]}, opset=23),
    # Heads read where a fused QKV projection wrote them and the result written
    # where the head merge wants it (the kernels' strided views, no transposes):
    # two query heads and one key/value head of 3 from one [2, 5, 12] tensor.
    case("attention_heads_in_place",
         [C("n", 3, "6, 3, 3"), "  q, k, v = Split<axis = 2>(A, n)",
          C("qs", 4, "2, 5, 2, 3"), C("ks", 4, "2, 5, 1, 3"),
          "  q4 = Reshape(q, qs)", "  k4 = Reshape(k, ks)", "  v4 = Reshape(v, ks)",
          "  qh = Transpose<perm = [0, 2, 1, 3]>(q4)", "  kh = Transpose<perm = [0, 2, 1, 3]>(k4)",
          "  vh = Transpose<perm = [0, 2, 1, 3]>(v4)",
          "  o = Attention<is_causal = 1>(qh, kh, vh)",
          "  ot = Transpose<perm = [0, 2, 1, 3]>(o)", C("os", 3, "2, 5, 6"),
          "  Y = Reshape(ot, os)"],
         {"A": [2, 5, 12]}, opset=23),
    # Reductions.
    case("reduce_sum", [C("ax", 1, "1"), "  Y = ReduceSum<keepdims = 0>(A, ax)"], {"A": [2, 3, 2]}),
    case("reduce_sum_all", ["  Y = ReduceSum(A)"], {"A": [2, 3]}),
    case("reduce_mean", ["  Y = ReduceMean<axes = [0, 2]>(A)"], {"A": [2, 3, 2]}),
    # Data movement.
    case("reshape", [C("s", 2, "3, -1"), "  Y = Reshape(A, s)"], {"A": [2, 3, 2]}),
    case("transpose", ["  Y = Transpose<perm = [2, 0, 1]>(A)"], {"A": [2, 3, 4]}),
    case("slice_steps", [C("s", 2, "0, 5"), C("e", 2, "2, 0"), C("a", 2, "0, 1"), C("t", 2, "1, -2"),
                         "  Y = Slice(A, s, e, a, t)"], {"A": [3, 6]}),
    case("split", [C("n", 2, "1, 2"), "  p, q = Split<axis = 1>(A, n)", "  Y = Mul(p, q)"],
         {"A": [2, 3]}),
    case("concat", ["  Y = Concat<axis = 0>(A, B)"], {"A": [1, 3], "B": [2, 3]}),
    case("unsqueeze_squeeze", [C("a", 1, "0"), "  u = Unsqueeze(A, a)", "  v = Squeeze(u, a)",
                               "  Y = Mul(u, v)"], {"A": [2, 3]}),
    case("expand", [C("s", 3, "2, 3, 2"), "  Y = Expand(A, s)"], {"A": [3, 1]}),
    case("gather_embedding", [C("i", "2,3", "1, 0, 1, 3, 1, 2"), "  Y = Gather(A, i)"], {"A": [4, 2]}),
    case("gather_axis1", [C("i", 2, "2, -1"), "  Y = Gather<axis = 1>(A, i)"], {"A": [2, 4]}),
    case("trilu", [C("k", 1, "1"), "  Y = Trilu<upper = 0>(A, k)"], {"A": [3, 4]}),
    # A weight used twice gets the sum of its gradients (a tied embedding).
    case("tied_weight", [C("i", 2, "1, 0"), "  e = Gather(A, i)", "  Y = MatMul(e, A)"],
         {"A": [2, 2]}),
]
