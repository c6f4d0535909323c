//===- Passes.td - Compute dialect passes -----------------*- tablegen -*-===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#ifndef ZERO_DIALECT_COMPUTE_TRANSFORMS_PASSES_TD
#define ZERO_DIALECT_COMPUTE_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def BuildTrainingStepPass : Pass<"zero-build-training-step", "mlir::ModuleOp"> {
  let summary = "Turns the forward function @main into one training step: forward, "
                "backward and optimizer update.";
  let description = [{
    Reverse-mode differentiation of the loss with respect to every trainable
    parameter (the float `compute.param` arguments not matched by `freeze`), one
    gradient rule per compute op. A parameter used several times (a tied embedding)
    gets the sum of its gradients. Then, for each parameter, an optimizer op
    (`compute.adamw` or `compute.sgd`) whose results are returned with
    `compute.updates = N`, the argument they replace; the optimizer state (moments,
    momentum buffers, the step counter) becomes extra `compute.state` arguments.
    With `gradients-only`, @main returns the loss and the gradients instead (for
    gradient checks).

    Before:
    ```mlir
    func.func @main(%w: tensor<4xf32> {compute.param = "w"},
                    %x: tensor<4xf32> {compute.input = 0 : i64}) -> tensor<f32> {
      %0 = compute.mul %w, %x : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
      %1 = compute.reduce_sum %0 {axes = array<i64: 0>, keepdims = false}
          : tensor<4xf32> -> tensor<f32>
      return %1 : tensor<f32>
    }
    ```
    After (SGD, abridged):
    ```mlir
    func.func @main(%w: tensor<4xf32> {compute.param = "w"},
                    %x: tensor<4xf32> {compute.input = 0 : i64},
                    %buf: tensor<4xf32> {compute.state = "w.momentum_buffer"})
        -> (tensor<f32>, tensor<4xf32> {compute.updates = 0 : i64},
            tensor<4xf32> {compute.updates = 2 : i64}) {
      ...
      %g = compute.mul %dy, %x : ...
      %w1, %buf1 = compute.sgd %w, %g, %buf {lr = ..., momentum = ...}
      return %1, %w1, %buf1 : ...
    }
    ```
  }];
  let options = [
    Option<"loss", "loss", "std::string", "\"\"",
           "Name of the output to minimize (default: the only scalar float output).">,
    Option<"freeze", "freeze", "std::string", "\"\"",
           "Regular expression: parameters whose names match are not trained.">,
    Option<"optimizer", "optimizer", "std::string", "\"adamw\"",
           "adamw or sgd.">,
    Option<"lr", "lr", "double", "1e-3", "Learning rate.">,
    Option<"beta1", "beta1", "double", "0.9", "AdamW's first-moment decay.">,
    Option<"beta2", "beta2", "double", "0.999", "AdamW's second-moment decay.">,
    Option<"eps", "eps", "double", "1e-8", "AdamW's denominator term.">,
    Option<"weightDecay", "weight-decay", "double", "-1.0",
           "Weight decay (default: 0.01 for adamw, 0 for sgd, as in PyTorch).">,
    Option<"momentum", "momentum", "double", "0.0", "SGD momentum.">,
    Option<"gradientsOnly", "gradients-only", "bool", "false",
           "Return the loss and the gradients; no optimizer.">,
  ];
}

#endif // ZERO_DIALECT_COMPUTE_TRANSFORMS_PASSES_TD
