"""Step 3 of the README's "Train your own model": the parameters remat trained, back in the
PyTorch model, evaluated on batches it never saw.

    /usr/bin/python3 examples/own_model/load.py DIR
reads DIR/trained.safetensors (what `remat train ... --save-params` wrote: every parameter and
batch norm buffer under its state_dict name) and prints the model's accuracy.
"""
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from export import Classifier, batches  # noqa: E402
from safetensors_file import read  # noqa: E402


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "own"
    model = Classifier()
    model.load_state_dict(read(os.path.join(out, "trained.safetensors")))  # every name must match
    model.eval()
    x, labels = batches(torch.Generator().manual_seed(2), 10)
    with torch.no_grad():
        accuracy = (model(x.reshape(-1, x.shape[-1])).argmax(-1) == labels.reshape(-1).long())
    print("PyTorch with remat's weights: accuracy %.3f on %d new samples" %
          (accuracy.float().mean().item(), accuracy.numel()))


if __name__ == "__main__":
    main()
