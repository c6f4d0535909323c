// RUN: %mlir_opt_zero %s --split-input-file --verify-diagnostics

func.func @bad_broadcast(%a: tensor<2x3xf32>, %b: tensor<4xf32>) {
  // expected-error@+1 {{operand shapes do not broadcast together}}
  %0 = compute.add %a, %b : tensor<2x3xf32>, tensor<4xf32> -> tensor<2x3xf32>
  return
}

// -----

func.func @bad_broadcast_result(%a: tensor<2x3xf32>, %b: tensor<3xf32>) {
  // expected-error@+1 {{result shape does not equal the broadcast shape}}
  %0 = compute.mul %a, %b : tensor<2x3xf32>, tensor<3xf32> -> tensor<3x3xf32>
  return
}

// -----

func.func @mixed_types(%a: tensor<3xf32>, %b: tensor<3xi64>) {
  // expected-error@+1 {{operands have different element types}}
  %0 = compute.sub %a, %b : tensor<3xf32>, tensor<3xi64> -> tensor<3xf32>
  return
}

// -----

func.func @equal_result(%a: tensor<3xf32>) {
  // expected-error@+1 {{result element type must be i1}}
  %0 = compute.equal %a, %a : tensor<3xf32>, tensor<3xf32> -> tensor<3xf32>
  return
}

// -----

func.func @div_result(%a: tensor<3xf32>) {
  // expected-error@+1 {{result element type must equal the operands' element type}}
  %0 = compute.div %a, %a : tensor<3xf32>, tensor<3xf32> -> tensor<3xf64>
  return
}

// -----

func.func @pow_result(%a: tensor<3xf32>, %e: tensor<i64>) {
  // expected-error@+1 {{result element type must equal the base's}}
  %0 = compute.pow %a, %e : tensor<3xf32>, tensor<i64> -> tensor<3xi64>
  return
}

// -----

func.func @where_types(%c: tensor<3xi1>, %a: tensor<3xf32>, %b: tensor<3xf64>) {
  // expected-error@+1 {{branches and result must have one element type}}
  %0 = compute.where %c, %a, %b : tensor<3xi1>, tensor<3xf32>, tensor<3xf64> -> tensor<3xf32>
  return
}

// -----

func.func @matmul_inner(%a: tensor<2x3xf32>, %b: tensor<4x5xf32>) {
  // expected-error@+1 {{operand shapes are not compatible for a matrix product}}
  %0 = compute.matmul %a, %b : tensor<2x3xf32>, tensor<4x5xf32> -> tensor<2x5xf32>
  return
}

// -----

func.func @matmul_result(%a: tensor<2x3xf32>, %b: tensor<3x5xf32>) {
  // expected-error@+1 {{result shape does not match the matrix product}}
  %0 = compute.matmul %a, %b : tensor<2x3xf32>, tensor<3x5xf32> -> tensor<2x6xf32>
  return
}

// -----

func.func @matmul_types(%a: tensor<2x3xf32>, %b: tensor<3x5xf64>) {
  // expected-error@+1 {{operands and result must have one element type}}
  %0 = compute.matmul %a, %b : tensor<2x3xf32>, tensor<3x5xf64> -> tensor<2x5xf32>
  return
}

// -----

func.func @softmax_axis(%a: tensor<2x3xf32>) {
  // expected-error@+1 {{axis 2 is out of range for rank 2}}
  %0 = compute.softmax %a {axis = 2 : i64} : tensor<2x3xf32>
  return
}

// -----

func.func @softmax_bias_axis(%a: tensor<2x3xf32>, %b: tensor<3xf32>) {
  // expected-error@+1 {{takes a scale or bias only along its last dimension}}
  %0 = compute.softmax %a bias(%b : tensor<3xf32>) {axis = 0 : i64} : tensor<2x3xf32>
  return
}

// -----

func.func @softmax_bias_shape(%a: tensor<2x3xf32>, %b: tensor<2xf32>) {
  // expected-error@+1 {{bias must be of the input's element type and broadcast to its shape}}
  %0 = compute.softmax %a bias(%b : tensor<2xf32>) {axis = 1 : i64} : tensor<2x3xf32>
  return
}

// -----

func.func @softmax_scale(%a: tensor<2x3xf32>) {
  // expected-error@+1 {{scale must be finite}}
  %0 = compute.softmax %a {axis = 1 : i64, scale = 0x7FF0000000000000 : f64} : tensor<2x3xf32>
  return
}

// -----

func.func @log_softmax_axis(%a: tensor<2x3xf32>) {
  // expected-error@+1 {{axis -1 is out of range for rank 2}}
  %0 = compute.log_softmax %a {axis = -1 : i64} : tensor<2x3xf32>
  return
}

// -----

func.func @layer_norm_scale(%x: tensor<2x8xf32>, %g: tensor<4xf32>) {
  // expected-error@+1 {{scale and bias must broadcast to the normalized dimensions}}
  %y, %m, %r = compute.layer_norm %x, %g, %g {axis = 1 : i64, epsilon = 1.0e-05 : f64} : tensor<2x8xf32>, tensor<4xf32>, tensor<4xf32> -> tensor<2x8xf32>, tensor<2x1xf32>, tensor<2x1xf32>
  return
}

// -----

func.func @layer_norm_result(%x: tensor<2x8xf32>, %g: tensor<8xf32>) {
  // expected-error@+1 {{result type must equal the input type}}
  %y, %m, %r = compute.layer_norm %x, %g, %g {axis = 1 : i64, epsilon = 1.0e-05 : f64} : tensor<2x8xf32>, tensor<8xf32>, tensor<8xf32> -> tensor<2x8xf64>, tensor<2x1xf32>, tensor<2x1xf32>
  return
}

// -----

func.func @layer_norm_stats(%x: tensor<2x8xf32>, %g: tensor<8xf32>) {
  // expected-error@+1 {{mean and inv_std_dev must have the input shape with the normalized dimensions set to 1}}
  %y, %m, %r = compute.layer_norm %x, %g, %g {axis = 1 : i64, epsilon = 1.0e-05 : f64} : tensor<2x8xf32>, tensor<8xf32>, tensor<8xf32> -> tensor<2x8xf32>, tensor<2xf32>, tensor<2x1xf32>
  return
}

// -----

func.func @layer_norm_axis(%x: tensor<2x8xf32>, %g: tensor<8xf32>) {
  // expected-error@+1 {{axis 2 is out of range for rank 2}}
  %y, %m, %r = compute.layer_norm %x, %g, %g {axis = 2 : i64, epsilon = 1.0e-05 : f64} : tensor<2x8xf32>, tensor<8xf32>, tensor<8xf32> -> tensor<2x8xf32>, tensor<2x1xf32>, tensor<2x1xf32>
  return
}

// -----

func.func @sce_rank(%s: tensor<8xf32>, %l: tensor<8xi64>) {
  // expected-error@+1 {{scores must have rank >= 2}}
  %loss, %p = compute.softmax_cross_entropy %s, %l {reduction = "mean"} : tensor<8xf32>, tensor<8xi64> -> tensor<f32>, tensor<8xf32>
  return
}

// -----

func.func @sce_labels(%s: tensor<8x4xf32>, %l: tensor<4xi64>) {
  // expected-error@+1 {{labels must have the scores' shape without dimension 1}}
  %loss, %p = compute.softmax_cross_entropy %s, %l {reduction = "mean"} : tensor<8x4xf32>, tensor<4xi64> -> tensor<f32>, tensor<8x4xf32>
  return
}

// -----

func.func @sce_weights(%s: tensor<8x4xf32>, %l: tensor<8xi64>, %w: tensor<8xf32>) {
  // expected-error@+1 {{weights must have shape [C]}}
  %loss, %p = compute.softmax_cross_entropy %s, %l weights %w {reduction = "mean"} : tensor<8x4xf32>, tensor<8xi64>, tensor<8xf32> -> tensor<f32>, tensor<8x4xf32>
  return
}

// -----

func.func @sce_reduction(%s: tensor<8x4xf32>, %l: tensor<8xi64>) {
  // expected-error@+1 {{reduction must be none, sum or mean, not 'max'}}
  %loss, %p = compute.softmax_cross_entropy %s, %l {reduction = "max"} : tensor<8x4xf32>, tensor<8xi64> -> tensor<f32>, tensor<8x4xf32>
  return
}

// -----

func.func @sce_loss_shape(%s: tensor<8x4xf32>, %l: tensor<8xi64>) {
  // expected-error@+1 {{loss shape does not match the reduction}}
  %loss, %p = compute.softmax_cross_entropy %s, %l {reduction = "none"} : tensor<8x4xf32>, tensor<8xi64> -> tensor<f32>, tensor<8x4xf32>
  return
}

// -----

func.func @sce_logp(%s: tensor<8x4xf32>, %l: tensor<8xi64>) {
  // expected-error@+1 {{log_prob must have the scores' type, or be f32 for 16-bit scores}}
  %loss, %p = compute.softmax_cross_entropy %s, %l {reduction = "sum"} : tensor<8x4xf32>, tensor<8xi64> -> tensor<f32>, tensor<8x5xf32>
  return
}

// -----

func.func @reduce_axis(%x: tensor<2x3xf32>) {
  // expected-error@+1 {{axis 2 is out of range}}
  %0 = compute.reduce_sum %x {axes = array<i64: 2>, keepdims = true} : tensor<2x3xf32> -> tensor<2x3xf32>
  return
}

// -----

func.func @reduce_sorted(%x: tensor<2x3xf32>) {
  // expected-error@+1 {{axes must be sorted and unique}}
  %0 = compute.reduce_mean %x {axes = array<i64: 1, 0>, keepdims = false} : tensor<2x3xf32> -> tensor<f32>
  return
}

// -----

func.func @reduce_shape(%x: tensor<2x3xf32>) {
  // expected-error@+1 {{result shape does not match the reduction}}
  %0 = compute.reduce_sum %x {axes = array<i64: 1>, keepdims = false} : tensor<2x3xf32> -> tensor<2x1xf32>
  return
}

// -----

func.func @reduce_type(%x: tensor<2x3xf32>) {
  // expected-error@+1 {{result element type must equal the input's}}
  %0 = compute.reduce_sum %x {axes = array<i64: 1>, keepdims = false} : tensor<2x3xf32> -> tensor<2xf64>
  return
}

// -----

func.func @reshape_count(%x: tensor<2x3xf32>) {
  // expected-error@+1 {{element count changes from 6 to 8}}
  %0 = compute.reshape %x : tensor<2x3xf32> -> tensor<2x4xf32>
  return
}

// -----

func.func @reshape_type(%x: tensor<2x3xf32>) {
  // expected-error@+1 {{element type must not change}}
  %0 = compute.reshape %x : tensor<2x3xf32> -> tensor<6xi32>
  return
}

// -----

func.func @transpose_perm(%x: tensor<2x3xf32>) {
  // expected-error@+1 {{perm is not a permutation}}
  %0 = compute.transpose %x {perm = array<i64: 0, 0>} : tensor<2x3xf32> -> tensor<2x3xf32>
  return
}

// -----

func.func @transpose_length(%x: tensor<2x3xf32>) {
  // expected-error@+1 {{perm must have one entry per input dimension}}
  %0 = compute.transpose %x {perm = array<i64: 0>} : tensor<2x3xf32> -> tensor<2x3xf32>
  return
}

// -----

func.func @transpose_result(%x: tensor<2x3xf32>) {
  // expected-error@+1 {{result dimension 0 must equal input dimension 1}}
  %0 = compute.transpose %x {perm = array<i64: 1, 0>} : tensor<2x3xf32> -> tensor<2x3xf32>
  return
}

// -----

func.func @transpose_rank(%x: tensor<2x3xf32>) {
  // expected-error@+1 {{result type does not match the permuted input}}
  %0 = compute.transpose %x {perm = array<i64: 1, 0>} : tensor<2x3xf32> -> tensor<3x2x1xf32>
  return
}

// -----

func.func @slice_outside(%x: tensor<4xf32>) {
  // expected-error@+1 {{dimension 0 reads outside the input}}
  %0 = compute.slice %x {starts = array<i64: 2>, steps = array<i64: 1>} : tensor<4xf32> -> tensor<3xf32>
  return
}

// -----

func.func @slice_step(%x: tensor<4xf32>) {
  // expected-error@+1 {{step of dimension 0 is zero}}
  %0 = compute.slice %x {starts = array<i64: 0>, steps = array<i64: 0>} : tensor<4xf32> -> tensor<2xf32>
  return
}

// -----

func.func @slice_rank(%x: tensor<4xf32>) {
  // expected-error@+1 {{starts, steps and the result need one entry per dimension}}
  %0 = compute.slice %x {starts = array<i64: 0, 0>, steps = array<i64: 1>} : tensor<4xf32> -> tensor<2xf32>
  return
}

// -----

func.func @slice_type(%x: tensor<4xf32>) {
  // expected-error@+1 {{element type must not change}}
  %0 = compute.slice %x {starts = array<i64: 0>, steps = array<i64: 1>} : tensor<4xf32> -> tensor<2xf64>
  return
}

// -----

func.func @concat_sum(%a: tensor<2x3xf32>, %b: tensor<2x3xf32>) {
  // expected-error@+1 {{result axis size must be the sum of the inputs'}}
  %0 = compute.concat %a, %b {axis = 0 : i64} : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<5x3xf32>
  return
}

// -----

func.func @concat_other_dims(%a: tensor<2x3xf32>, %b: tensor<2x4xf32>) {
  // expected-error@+1 {{inputs differ from the result outside the axis}}
  %0 = compute.concat %a, %b {axis = 0 : i64} : tensor<2x3xf32>, tensor<2x4xf32> -> tensor<4x3xf32>
  return
}

// -----

func.func @concat_rank(%a: tensor<2x3xf32>, %b: tensor<6xf32>) {
  // expected-error@+1 {{inputs must have the result's rank and element type}}
  %0 = compute.concat %a, %b {axis = 0 : i64} : tensor<2x3xf32>, tensor<6xf32> -> tensor<4x3xf32>
  return
}

// -----

func.func @concat_axis(%a: tensor<2x3xf32>) {
  // expected-error@+1 {{axis 2 is out of range for rank 2}}
  %0 = compute.concat %a {axis = 2 : i64} : tensor<2x3xf32> -> tensor<2x3xf32>
  return
}

// -----

func.func @concat_empty() {
  // expected-error@+1 {{needs at least one input}}
  %0 = "compute.concat"() {axis = 0 : i64} : () -> tensor<2x3xf32>
  return
}

// -----

func.func @expand_shape(%x: tensor<3xf32>) {
  // expected-error@+1 {{input does not broadcast to the result shape}}
  %0 = compute.expand %x : tensor<3xf32> -> tensor<2x4xf32>
  return
}

// -----

func.func @expand_type(%x: tensor<3xf32>) {
  // expected-error@+1 {{element type must not change}}
  %0 = compute.expand %x : tensor<3xf32> -> tensor<2x3xi64>
  return
}

// -----

func.func @gather_result(%t: tensor<16x8xf32>, %i: tensor<5xi64>) {
  // expected-error@+1 {{result type must be data[:axis] ++ indices ++ data[axis+1:]}}
  %0 = compute.gather %t, %i {axis = 0 : i64} : tensor<16x8xf32>, tensor<5xi64> -> tensor<5x16xf32>
  return
}

// -----

func.func @gather_axis(%t: tensor<16x8xf32>, %i: tensor<5xi64>) {
  // expected-error@+1 {{axis 3 is out of range for rank 2}}
  %0 = compute.gather %t, %i {axis = 3 : i64} : tensor<16x8xf32>, tensor<5xi64> -> tensor<16x8xf32>
  return
}

// -----

func.func @gather_scalar(%t: tensor<f32>, %i: tensor<5xi64>) {
  // expected-error@+1 {{data must have rank >= 1}}
  %0 = compute.gather %t, %i {axis = 0 : i64} : tensor<f32>, tensor<5xi64> -> tensor<5xf32>
  return
}

// -----

func.func @trilu_rank(%x: tensor<4xf32>) {
  // expected-error@+1 {{input must have rank >= 2}}
  %0 = compute.trilu %x {upper = true, k = 0 : i64} : tensor<4xf32>
  return
}

// -----

func.func @unary_float_only(%x: tensor<4xi64>) {
  // expected-error@+1 {{must be ranked tensor of 32-bit float or 64-bit float or bfloat16 type or 16-bit float values}}
  %0 = compute.exp %x : tensor<4xi64>
  return
}

// -----

func.func @softmax_grad_axis(%y: tensor<2x8xf32>) {
  // expected-error@+1 {{axis 2 is out of range for rank 2}}
  %dx = compute.softmax_grad %y, %y {axis = 2 : i64} : tensor<2x8xf32>
  return
}

// -----

func.func @layer_norm_grad_stats(%x: tensor<2x8xf32>, %g: tensor<8xf32>, %m: tensor<2xf32>) {
  // expected-error@+1 {{mean and inv_std_dev must have the input shape with the normalized dimensions set to 1}}
  %dx, %dg, %db = compute.layer_norm_grad %x, %g, %m, %m, %x {axis = 1 : i64} : tensor<2x8xf32>, tensor<8xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2x8xf32> -> tensor<2x8xf32>, tensor<8xf32>, tensor<8xf32>
  return
}

// -----

func.func @layer_norm_grad_scale_grad(%x: tensor<2x8xf32>, %g: tensor<8xf32>, %m: tensor<2x1xf32>) {
  // expected-error@+1 {{scale_grad and bias_grad must have the normalized shape}}
  %dx, %dg, %db = compute.layer_norm_grad %x, %g, %m, %m, %x {axis = 1 : i64} : tensor<2x8xf32>, tensor<8xf32>, tensor<2x1xf32>, tensor<2x1xf32>, tensor<2x8xf32> -> tensor<2x8xf32>, tensor<4xf32>, tensor<8xf32>
  return
}

// -----

func.func @layer_norm_grad_axis(%x: tensor<2x8xf32>, %g: tensor<8xf32>, %m: tensor<2x1xf32>) {
  // expected-error@+1 {{axis 3 is out of range for rank 2}}
  %dx, %dg, %db = compute.layer_norm_grad %x, %g, %m, %m, %x {axis = 3 : i64} : tensor<2x8xf32>, tensor<8xf32>, tensor<2x1xf32>, tensor<2x1xf32>, tensor<2x8xf32> -> tensor<2x8xf32>, tensor<8xf32>, tensor<8xf32>
  return
}

// -----

func.func @layer_norm_grad_types(%x: tensor<2x8xf32>, %g: tensor<8xf32>, %m: tensor<2x1xf32>, %dy: tensor<2x4xf32>) {
  // expected-error@+1 {{grad and input_grad must have the input type}}
  %dx, %dg, %db = compute.layer_norm_grad %x, %g, %m, %m, %dy {axis = 1 : i64} : tensor<2x8xf32>, tensor<8xf32>, tensor<2x1xf32>, tensor<2x1xf32>, tensor<2x4xf32> -> tensor<2x8xf32>, tensor<8xf32>, tensor<8xf32>
  return
}

// -----

func.func @layer_norm_grad_scale(%x: tensor<2x8xf32>, %g: tensor<3xf32>, %m: tensor<2x1xf32>) {
  // expected-error@+1 {{scale must broadcast to the normalized dimensions}}
  %dx, %dg, %db = compute.layer_norm_grad %x, %g, %m, %m, %x {axis = 1 : i64} : tensor<2x8xf32>, tensor<3xf32>, tensor<2x1xf32>, tensor<2x1xf32>, tensor<2x8xf32> -> tensor<2x8xf32>, tensor<8xf32>, tensor<8xf32>
  return
}

// -----

func.func @sce_grad_grad_shape(%lp: tensor<8x4xf32>, %l: tensor<8xi64>, %g: tensor<8xf32>) {
  // expected-error@+1 {{grad shape does not match the reduction}}
  %0 = compute.softmax_cross_entropy_grad %lp, %l, %g {reduction = "mean"} : tensor<8x4xf32>, tensor<8xi64>, tensor<8xf32> -> tensor<8x4xf32>
  return
}

// -----

func.func @sce_grad_labels(%lp: tensor<8x4xf32>, %l: tensor<4xi64>, %g: tensor<f32>) {
  // expected-error@+1 {{labels must have the scores' shape without dimension 1}}
  %0 = compute.softmax_cross_entropy_grad %lp, %l, %g {reduction = "sum"} : tensor<8x4xf32>, tensor<4xi64>, tensor<f32> -> tensor<8x4xf32>
  return
}

// -----

func.func @sce_grad_rank(%lp: tensor<8xf32>, %l: tensor<8xi64>, %g: tensor<f32>) {
  // expected-error@+1 {{log_prob must have rank >= 2}}
  %0 = compute.softmax_cross_entropy_grad %lp, %l, %g {reduction = "sum"} : tensor<8xf32>, tensor<8xi64>, tensor<f32> -> tensor<8xf32>
  return
}

// -----

func.func @sce_grad_reduction(%lp: tensor<8x4xf32>, %l: tensor<8xi64>, %g: tensor<f32>) {
  // expected-error@+1 {{reduction must be none, sum or mean, not 'avg'}}
  %0 = compute.softmax_cross_entropy_grad %lp, %l, %g {reduction = "avg"} : tensor<8x4xf32>, tensor<8xi64>, tensor<f32> -> tensor<8x4xf32>
  return
}

// -----

func.func @sce_grad_weights(%lp: tensor<8x4xf32>, %l: tensor<8xi64>, %g: tensor<f32>, %w: tensor<8xf32>) {
  // expected-error@+1 {{weights must have shape [C]}}
  %0 = compute.softmax_cross_entropy_grad %lp, %l, %g weights %w {reduction = "sum"} : tensor<8x4xf32>, tensor<8xi64>, tensor<f32>, tensor<8xf32> -> tensor<8x4xf32>
  return
}

// -----

func.func @sce_grad_result(%lp: tensor<8x4xf32>, %l: tensor<8xi64>, %g: tensor<f32>) {
  // expected-error@+1 {{result must have the log_prob's type, or be 16-bit for f32 log_prob}}
  %0 = compute.softmax_cross_entropy_grad %lp, %l, %g {reduction = "sum"} : tensor<8x4xf32>, tensor<8xi64>, tensor<f32> -> tensor<8x5xf32>
  return
}

// -----

func.func @gather_grad_shape(%i: tensor<5xi64>, %g: tensor<5x4xf32>) {
  // expected-error@+1 {{grad must have the shape of the gather's result}}
  %0 = compute.gather_grad %i, %g {axis = 0 : i64} : tensor<5xi64>, tensor<5x4xf32> -> tensor<16x8xf32>
  return
}

// -----

func.func @gather_grad_axis(%i: tensor<5xi64>, %g: tensor<5x4xf32>) {
  // expected-error@+1 {{axis 2 is out of range for rank 2}}
  %0 = compute.gather_grad %i, %g {axis = 2 : i64} : tensor<5xi64>, tensor<5x4xf32> -> tensor<16x4xf32>
  return
}

// -----

func.func @slice_grad_outside(%g: tensor<3xf32>) {
  // expected-error@+1 {{dimension 0 writes outside the result}}
  %0 = compute.slice_grad %g {starts = array<i64: 2>, steps = array<i64: 1>} : tensor<3xf32> -> tensor<4xf32>
  return
}

// -----

func.func @slice_grad_rank(%g: tensor<3xf32>) {
  // expected-error@+1 {{starts, steps and grad need one entry per result dimension}}
  %0 = compute.slice_grad %g {starts = array<i64: 0, 0>, steps = array<i64: 1, 1>} : tensor<3xf32> -> tensor<4x1xf32>
  return
}

// -----

func.func @slice_grad_step(%g: tensor<3xf32>) {
  // expected-error@+1 {{step of dimension 0 is zero}}
  %0 = compute.slice_grad %g {starts = array<i64: 0>, steps = array<i64: 0>} : tensor<3xf32> -> tensor<4xf32>
  return
}

// -----

func.func @adamw_step(%p: tensor<4xf32>, %t: tensor<1xi64>) {
  // expected-error@+1 {{operand #4 must be 0D tensor of 64-bit signless integer values}}
  %p1, %m1, %v1 = compute.adamw %p, %p, %p, %p, %t {lr = 1.0e-3 : f64, beta1 = 0.9 : f64, beta2 = 0.999 : f64, eps = 1.0e-8 : f64, weight_decay = 0.01 : f64} : tensor<4xf32>, tensor<4xf32>, tensor<1xi64> -> tensor<4xf32>
  return
}

// -----

func.func @attention_heads(%q: tensor<1x3x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>) {
  // expected-error@+1 {{key/value heads (2) must divide query heads (3)}}
  %o, %l = compute.attention %q, %k, %v {scale = 0.5 : f64} : tensor<1x3x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32> -> tensor<1x3x4x8xf32>, tensor<1x3x4xf32>
  return
}

// -----

func.func @attention_key_size(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x4xf32>, %v: tensor<1x2x4x8xf32>) {
  // expected-error@+1 {{key's size per head (4) is not query's (8)}}
  %o, %l = compute.attention %q, %k, %v {scale = 0.5 : f64} : tensor<1x2x4x8xf32>, tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32> -> tensor<1x2x4x8xf32>, tensor<1x2x4xf32>
  return
}

// -----

func.func @attention_mask(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x5x8xf32>, %v: tensor<1x2x5x8xf32>, %m: tensor<4x4xi1>) {
  // expected-error@+1 {{mask must broadcast to the scores [1, 2, 4, 5]}}
  %o, %l = compute.attention %q, %k, %v mask(%m : tensor<4x4xi1>) {scale = 0.5 : f64} : tensor<1x2x4x8xf32>, tensor<1x2x5x8xf32>, tensor<1x2x5x8xf32> -> tensor<1x2x4x8xf32>, tensor<1x2x4xf32>
  return
}

// -----

func.func @attention_lse(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>) {
  // expected-error@+1 {{lse must be 'tensor<1x2x4xf32>'}}
  %o, %l = compute.attention %q, %k, %v {scale = 0.5 : f64} : tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32> -> tensor<1x2x4x8xf32>, tensor<1x2x4xf64>
  return
}

// -----

func.func @attention_scale(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>) {
  // expected-error@+1 {{scale must be finite}}
  %o, %l = compute.attention %q, %k, %v {scale = 0x7FF0000000000000 : f64} : tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32> -> tensor<1x2x4x8xf32>, tensor<1x2x4xf32>
  return
}

// -----

func.func @attention_grad_types(%q: tensor<1x2x4x8xf32>, %k: tensor<1x1x4x8xf32>, %v: tensor<1x1x4x8xf32>, %o: tensor<1x2x4x8xf32>, %l: tensor<1x2x4xf32>) {
  // expected-error@+1 {{each gradient must have its operand's type}}
  %dq, %dk, %dv = compute.attention_grad %q, %k, %v, %o, %l, %o {scale = 0.5 : f64} : tensor<1x2x4x8xf32>, tensor<1x1x4x8xf32>, tensor<1x1x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4xf32>, tensor<1x2x4x8xf32> -> tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x1x4x8xf32>
  return
}

// -----

func.func @sce_with_grad_loss_type(%s: tensor<8x4xf32>, %l: tensor<8xi64>, %g: tensor<f16>) {
  // expected-error@+1 {{loss must have the scores' element type, or be f32 for 16-bit scores}}
  %loss, %ds = compute.softmax_cross_entropy_with_grad %s, %l, %g {reduction = "mean"} : tensor<8x4xf32>, tensor<8xi64>, tensor<f16> -> tensor<f16>, tensor<8x4xf32>
  return
}

// -----

func.func @sce_with_grad_grad_type(%s: tensor<8x4xbf16>, %l: tensor<8xi64>, %g: tensor<bf16>) {
  // expected-error@+1 {{grad must have the loss's type}}
  %loss, %ds = compute.softmax_cross_entropy_with_grad %s, %l, %g {reduction = "mean"} : tensor<8x4xbf16>, tensor<8xi64>, tensor<bf16> -> tensor<f32>, tensor<8x4xbf16>
  return
}

// -----

func.func @sce_with_grad_none(%s: tensor<8x4xf32>, %l: tensor<8xi64>, %g: tensor<f32>) {
  // expected-error@+1 {{loss shape does not match the reduction}}
  %loss, %ds = compute.softmax_cross_entropy_with_grad %s, %l, %g {reduction = "none"} : tensor<8x4xf32>, tensor<8xi64>, tensor<f32> -> tensor<f32>, tensor<8x4xf32>
  return
}

// -----

func.func @sce_with_grad_weights(%s: tensor<8x4xbf16>, %l: tensor<8xi64>, %g: tensor<f32>, %w: tensor<4xbf16>) {
  // expected-error@+1 {{weights must have the loss's element type}}
  %loss, %ds = compute.softmax_cross_entropy_with_grad %s, %l, %g weights %w {reduction = "sum"} : tensor<8x4xbf16>, tensor<8xi64>, tensor<f32>, tensor<4xbf16> -> tensor<f32>, tensor<8x4xbf16>
  return
}

// -----

func.func @sce_with_grad_result(%s: tensor<8x4xbf16>, %l: tensor<8xi64>, %g: tensor<f32>) {
  // expected-error@+1 {{scores_grad must have the scores' type}}
  %loss, %ds = compute.softmax_cross_entropy_with_grad %s, %l, %g {reduction = "mean"} : tensor<8x4xbf16>, tensor<8xi64>, tensor<f32> -> tensor<f32>, tensor<8x4xf32>
  return
}

// -----

func.func @fused_matmul_nothing(%x: tensor<4x8xf32>, %w: tensor<8x16xf32>) {
  // expected-error@+1 {{needs a bias, an addend, an activation or lhs_sums (else it is a compute.matmul)}}
  %y = compute.fused_matmul %x, %w : tensor<4x8xf32>, tensor<8x16xf32> -> tensor<4x16xf32>
  return
}

// -----

func.func @fused_matmul_row_bias(%x: tensor<4x8xf32>, %w: tensor<8x16xf32>, %b: tensor<4x1xf32>) {
  // expected-error@+1 {{bias must be [N] (or ones then N) of the result's element type, N its last dimension}}
  %y = compute.fused_matmul %x, %w bias(%b : tensor<4x1xf32>) : tensor<4x8xf32>, tensor<8x16xf32> -> tensor<4x16xf32>
  return
}

// -----

func.func @fused_matmul_addend(%x: tensor<4x8xf32>, %w: tensor<8x16xf32>, %r: tensor<16xf32>) {
  // expected-error@+1 {{addend must have the result's type}}
  %y = compute.fused_matmul %x, %w addend(%r : tensor<16xf32>) : tensor<4x8xf32>, tensor<8x16xf32> -> tensor<4x16xf32>
  return
}

// -----

func.func @fused_matmul_batched_lhs_sums(%x: tensor<2x4x8xf32>, %w: tensor<8x16xf32>) {
  // expected-error@+1 {{lhs_sums need a 2-D product and are [M] of the result's element type, M the rows of lhs}}
  %y, %s = compute.fused_matmul %x, %w : tensor<2x4x8xf32>, tensor<8x16xf32> -> tensor<2x4x16xf32>, tensor<4xf32>
  return
}

// -----

func.func @fused_matmul_lhs_sums_length(%x: tensor<4x8xf32>, %w: tensor<8x16xf32>) {
  // expected-error@+1 {{lhs_sums need a 2-D product and are [M] of the result's element type, M the rows of lhs}}
  %y, %s = compute.fused_matmul %x, %w : tensor<4x8xf32>, tensor<8x16xf32> -> tensor<4x16xf32>, tensor<8xf32>
  return
}

// -----

func.func @fused_matmul_shape(%x: tensor<4x8xf32>, %w: tensor<8x16xf32>, %b: tensor<16xf32>) {
  // expected-error@+1 {{result shape does not match the matrix product}}
  %y = compute.fused_matmul %x, %w bias(%b : tensor<16xf32>) : tensor<4x8xf32>, tensor<8x16xf32> -> tensor<4x8xf32>
  return
}

// -----

func.func @nonfinite_count_nothing() {
  // expected-error@+1 {{counts at least one tensor}}
  %n = "compute.nonfinite_count"() : () -> tensor<f32>
  return
}

// -----

func.func @fused_matmul_unknown_activation(%x: tensor<4x8xf32>, %w: tensor<8x16xf32>) {
  // expected-error@+1 {{activation must be "gelu_tanh", not "relu"}}
  %y, %p = compute.fused_matmul %x, %w {activation = "relu"} : tensor<4x8xf32>, tensor<8x16xf32> -> tensor<4x16xf32> pre_activation(tensor<4x16xf32>)
  return
}

// -----

func.func @fused_matmul_activation_both_ways(%x: tensor<4x8xf32>, %w: tensor<8x16xf32>, %h: tensor<4x16xf32>) {
  // expected-error@+1 {{an activation needs either a pre_activation result (forward) or an activation_input (its gradient)}}
  %y, %p = compute.fused_matmul %x, %w activation_input(%h : tensor<4x16xf32>) {activation = "gelu_tanh"} : tensor<4x8xf32>, tensor<8x16xf32> -> tensor<4x16xf32> pre_activation(tensor<4x16xf32>)
  return
}

// -----

func.func @fused_matmul_activation_addend(%x: tensor<4x8xf32>, %w: tensor<8x16xf32>, %r: tensor<4x16xf32>) {
  // expected-error@+1 {{an activation takes no addend or lhs_sums}}
  %y, %p = compute.fused_matmul %x, %w addend(%r : tensor<4x16xf32>) {activation = "gelu_tanh"} : tensor<4x8xf32>, tensor<8x16xf32> -> tensor<4x16xf32> pre_activation(tensor<4x16xf32>)
  return
}

// -----

func.func @fused_matmul_pre_activation_without_activation(%x: tensor<4x8xf32>, %w: tensor<8x16xf32>, %b: tensor<16xf32>) {
  // expected-error@+1 {{a pre_activation or activation_input needs an activation}}
  %y, %p = compute.fused_matmul %x, %w bias(%b : tensor<16xf32>) : tensor<4x8xf32>, tensor<8x16xf32> -> tensor<4x16xf32> pre_activation(tensor<4x16xf32>)
  return
}
