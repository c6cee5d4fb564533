"""Your own PyTorch model into remat, step 1 of the README's "Train your own model": a small
classifier (Linear, BatchNorm1d, ReLU, Linear), exported to ONNX in training mode, and a file
of training batches. Replace the model and the data with yours.

    /usr/bin/python3 examples/own_model/export.py DIR
writes DIR/model.onnx and DIR/data.safetensors (x F32 [STEPS, BATCH, 16], labels I32 [STEPS,
BATCH]: one batch per training step; the label is 1 where the row's sum is positive).
Needs Debian's python3-torch; the safetensors file is written by hand (examples/own_model/
safetensors_file.py), so the safetensors package is not needed.
"""
import os
import sys

import torch
import torch.nn as nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from safetensors_file import write  # noqa: E402

STEPS, BATCH, FEATURES = 200, 32, 16


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.hidden = nn.Linear(FEATURES, 32)
        self.norm = nn.BatchNorm1d(32)
        self.out = nn.Linear(32, 2)

    def forward(self, x):
        return self.out(torch.relu(self.norm(self.hidden(x))))


def batches(generator, steps):
    x = torch.rand(steps, BATCH, FEATURES, generator=generator) * 2 - 1
    return x, (x.sum(-1) > 0).int()


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "own"
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(0)
    model = Classifier().train()
    # Training mode keeps the batch norm a batch norm (and the dropout a dropout); the batch
    # axis is dynamic so remat's --batch sets it.
    torch.onnx.export(model, torch.zeros(BATCH, FEATURES), os.path.join(out, "model.onnx"),
                      input_names=["x"], output_names=["logits"], opset_version=17,
                      dynamic_axes={"x": {0: "batch"}, "logits": {0: "batch"}},
                      training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False)
    x, labels = batches(torch.Generator().manual_seed(1), STEPS)
    write(os.path.join(out, "data.safetensors"), {"x": x, "labels": labels})
    print("wrote %s/model.onnx and %s/data.safetensors (%d batches of %d)" % (out, out, STEPS, BATCH))


if __name__ == "__main__":
    main()
