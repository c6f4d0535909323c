// RUN: %mlir_opt_zero %s --split-input-file --verify-diagnostics
// The compute.* attributes that passes hand each other are declared in one table
// (lib/Dialect/Compute/IR/ComputeAttributes.cpp) and verified: a malformed one is an
// error where it is.

// expected-error @+1 {{'compute.param' (a parameter's initializer name) must be a non-empty string, not 3 : i64}}
func.func @param_not_a_string(%w: tensor<4xf32> {compute.param = 3 : i64}) {
  return
}

// -----

// expected-error @+1 {{unknown compute dialect attribute 'compute.parm'}}
func.func @misspelled(%w: tensor<4xf32> {compute.parm = "w"}) {
  return
}

// -----

// expected-error @+1 {{'compute.bucket_elements' (a bucket's padded element count) must be a non-negative i64, not -4 : i64}}
func.func @negative_count(%b: tensor<4xf32> {compute.param_bucket = "b", compute.bucket_elements = -4 : i64}) {
  return
}

// -----

// expected-error @+1 {{'compute.updates' (the argument a result updates) belongs on a function result, not on a function argument}}
func.func @updates_on_an_argument(%w: tensor<4xf32> {compute.updates = 0 : i64}) {
  return
}

// -----

// expected-error @+1 {{result 0's 'compute.updates' names argument 2 of 1}}
func.func @updates_out_of_range(%w: tensor<4xf32> {compute.param = "w"}) -> (tensor<4xf32> {compute.updates = 2 : i64}) {
  return %w : tensor<4xf32>
}

// -----

// expected-error @+1 {{'compute.output_names' (the graph outputs' names) must be an array of strings, not [1]}}
func.func @output_names(%x: tensor<4xf32>) -> tensor<4xf32> attributes {compute.output_names = [1]} {
  return %x : tensor<4xf32>
}

// -----

// expected-error @+1 {{'compute.precision' (the 16-bit type) must be "bf16" or "fp16", not "fp8"}}
func.func @precision(%x: tensor<4xf32>) attributes {compute.precision = "fp8"} {
  return
}

// -----

func.func @on_an_op(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'compute.frozen' (a parameter that does not train) belongs on a function argument, not on 'compute.relu'}}
  %r = compute.relu %x {compute.frozen} : tensor<4xf32>
  return %r : tensor<4xf32>
}
