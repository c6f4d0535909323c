#!/usr/bin/env python3
# Writes input_0.pb for mlp.onnxtxt into the folder given: x = [[1,2,3],[4,5,6]].
import os
import sys

import numpy as np
import onnx.numpy_helper as nh

x = np.array([[1, 2, 3], [4, 5, 6]], dtype=np.float32)
os.makedirs(sys.argv[1], exist_ok=True)
with open(os.path.join(sys.argv[1], "input_0.pb"), "wb") as f:
    f.write(nh.from_array(x, "x").SerializeToString())
