// RUN: %mlir_opt_zero %s --pass-pipeline='builtin.module(zero-autocast{precision=bf16})' | FileCheck %s --check-prefix=CAST
// RUN: %mlir_opt_zero %s --pass-pipeline='builtin.module(zero-autocast{precision=bf16},zero-build-training-step,canonicalize,cse)' | FileCheck %s --check-prefix=STEP

// Autocast: a layer norm that only matrix products read (which take bf16
// operands) runs on its bf16 input, scale and bias and gives a bf16 result, its
// mean and 1/std staying f32: no cast before or after it. One whose result an
// add reads too keeps autocast's f32 layer norm (its f32 result is what the add
// reads).
// CAST-LABEL: func.func @main
// CAST-NOT: compute.cast {{.+}} : tensor<2x5xbf16> -> tensor<2x5xf32>
// CAST: compute.layer_norm {{.+}} : tensor<2x5xbf16>, tensor<5xbf16>, tensor<5xbf16> -> tensor<2x5xbf16>, tensor<2x1xf32>, tensor<2x1xf32>
// CAST-NEXT: compute.matmul {{.+}} : tensor<2x5xbf16>, tensor<5x3xbf16> -> tensor<2x3xbf16>
// CAST: compute.cast {{.+}} : tensor<2x3xbf16> -> tensor<2x3xf32>
// CAST: compute.layer_norm {{.+}} : tensor<2x3xf32>, tensor<3xf32>, tensor<3xf32> -> tensor<2x3xf32>, tensor<2x1xf32>, tensor<2x1xf32>
// CAST: compute.add {{.+}} : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xf32>

// The backward follows: the first layer norm's gradient takes the bf16 input and
// gradient with the f32 statistics and gives bf16 gradients.
// STEP-LABEL: func.func @main
// STEP: compute.layer_norm_grad {{.+}} : tensor<2x5xbf16>, tensor<5xbf16>, tensor<2x1xf32>, tensor<2x1xf32>, tensor<2x5xbf16> -> tensor<2x5xbf16>, tensor<5xbf16>, tensor<5xbf16>
func.func @main(%emb: tensor<7x5xf32> {compute.param = "emb"}, %g1: tensor<5xf32> {compute.param = "g1"},
                %b1: tensor<5xf32> {compute.param = "b1"}, %w: tensor<5x3xf32> {compute.param = "w"},
                %g2: tensor<3xf32> {compute.param = "g2"}, %b2: tensor<3xf32> {compute.param = "b2"},
                %t: tensor<2xi64> {compute.input = 0 : i64})
    -> tensor<f32> attributes {compute.output_names = ["loss"]} {
  %e = compute.gather %emb, %t {axis = 0 : i64} : tensor<7x5xf32>, tensor<2xi64> -> tensor<2x5xf32>
  %n, %m, %r = compute.layer_norm %e, %g1, %b1 {axis = 1 : i64, epsilon = 1.0e-5 : f64} : tensor<2x5xf32>, tensor<5xf32>, tensor<5xf32> -> tensor<2x5xf32>, tensor<2x1xf32>, tensor<2x1xf32>
  %h = compute.matmul %n, %w : tensor<2x5xf32>, tensor<5x3xf32> -> tensor<2x3xf32>
  %n2, %m2, %r2 = compute.layer_norm %h, %g2, %b2 {axis = 1 : i64, epsilon = 1.0e-5 : f64} : tensor<2x3xf32>, tensor<3xf32>, tensor<3xf32> -> tensor<2x3xf32>, tensor<2x1xf32>, tensor<2x1xf32>
  %s = compute.add %n2, %n2 : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xf32>
  %loss = compute.reduce_sum %s {axes = array<i64: 0, 1>, keepdims = false} : tensor<2x3xf32> -> tensor<f32>
  return %loss : tensor<f32>
}
