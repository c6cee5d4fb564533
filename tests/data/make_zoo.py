"""Exports the ONNX zoo of issue 39 (models no one here wrote) and PyTorch's training of each, for
tests/training/test_zoo.py.

For each model: torchvision's resnet18, mobilenet_v2, mobilenet_v3_small, squeezenet1_1,
shufflenet_v2_x0_5, efficientnet_b0 and mnasnet0_5 at 3 x 64 x 64 with 10 classes, and three
stacks of torch.nn.TransformerEncoderLayer (batch_first; post-norm, pre-norm, and a causal
decoder-only one whose mask is built from the sequence length, a post-norm one given a
src_key_padding_mask as a BOOL input, and the causal one given both): draw the parameters (the
library's own initialisation, seeded), set dropout to 0 (masks cannot match across two
libraries) and stochastic depth off, export in training mode (batch norms stay batch norms) at
opset 13 and 17 without constant folding, then train a float64 copy of the exported float32
values on one batch for STEPS steps of SGD with momentum, and a float32 copy likewise. Writes
into DIR:

  NAME_opsetK.onnx            the export
  NAME.data.safetensors       the batch once per step: `x` F32 [STEPS, B, 3, 64, 64] or `tokens`
                              I32 [STEPS, B, S] (and the padding mask `pad` BOOL [STEPS, B, S]);
                              `labels` I32 [STEPS, B]
  NAME.torch.safetensors      every parameter after the steps (F32), by state_dict name
  NAME.torch1.safetensors     every parameter after the first step
  NAME.torch32.safetensors    every parameter after the steps of PyTorch's own float32 run (how
                              far float32 arithmetic alone strays from float64 on this model)
  NAME.init.safetensors       every parameter before them (F32)
  zoo.json                    what was made: name, opsets, inputs, batch, optimizer, steps,
                              and whether it has attention

Run: /usr/bin/python3 tests/data/make_zoo.py DIR [NAME...]   (Debian's python3-torch and
python3-torchvision; no other package)
"""
import copy
import json
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F
import torchvision

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_golden import f32, i32, write_safetensors  # noqa: E402

SEED = 20261127
STEPS = 4
BATCH = 4
LR, MOMENTUM = 0.01, 0.9
OPTIMIZER = "sgd:lr=%g,momentum=%g" % (LR, MOMENTUM)


class Encoder(nn.Module):
    """Token embeddings, two nn.TransformerEncoderLayer (hidden 16, 2 heads, ffn 32), the first
    token classified. |causal|: each position sees itself and those before it, through a mask
    built from the sequence length (Range, comparisons and Where, which the importer folds)."""

    def __init__(self, norm_first, causal, padded=False, vocab=20, hidden=16, classes=3):
        super().__init__()
        self.causal, self.padded = causal, padded
        self.embed = nn.Embedding(vocab, hidden)
        layer = nn.TransformerEncoderLayer(hidden, 2, 32, dropout=0.0, batch_first=True,
                                           norm_first=norm_first)
        self.encoder = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
        self.head = nn.Linear(hidden, classes)

    def forward(self, tokens, pad=None):
        h = self.embed(tokens)
        mask = None
        if self.causal:
            s = tokens.shape[1]
            position = torch.arange(s)
            ahead = position.unsqueeze(0) > position.unsqueeze(1)
            mask = torch.zeros(s, s).masked_fill(ahead, float("-inf"))
        h = self.encoder(h, mask=mask, src_key_padding_mask=pad)
        return self.head(h[:, -1] if self.causal else h[:, 0])


def vision(build):
    return lambda: build(num_classes=10)


MODELS = {
    "resnet18": vision(torchvision.models.resnet18),
    "mobilenet_v2": vision(torchvision.models.mobilenet_v2),
    "mobilenet_v3_small": vision(torchvision.models.mobilenet_v3_small),
    "squeezenet1_1": vision(torchvision.models.squeezenet1_1),
    "shufflenet_v2_x0_5": vision(torchvision.models.shufflenet_v2_x0_5),
    "efficientnet_b0": lambda: torchvision.models.efficientnet_b0(num_classes=10,
                                                                  stochastic_depth_prob=0.0),
    "mnasnet0_5": vision(torchvision.models.mnasnet0_5),
    "encoder_post_norm": lambda: Encoder(norm_first=False, causal=False),
    "encoder_pre_norm": lambda: Encoder(norm_first=True, causal=False),
    "decoder_causal": lambda: Encoder(norm_first=False, causal=True),
    "encoder_padded": lambda: Encoder(norm_first=False, causal=False, padded=True),
    "decoder_causal_padded": lambda: Encoder(norm_first=False, causal=True, padded=True),
}
OPSETS = (13, 17)


def boolean(t):
    t = t.detach().contiguous()
    return ("BOOL", tuple(t.shape), bytes(int(v) for v in t.flatten().tolist()))


def write(path, tensors):
    """|tensors|: name -> tensor, floats as F32, booleans as BOOL and integers as I32
    (make_golden.py's writer)."""
    write_safetensors(path, {k: f32(t) if t.is_floating_point() else
                             boolean(t) if t.dtype == torch.bool else i32(t)
                             for k, t in tensors.items()}, {})


def without_dropout(model):
    for m in model.modules():
        if isinstance(m, nn.Dropout):
            m.p = 0.0
    return model


def train(model, inputs, labels):
    """STEPS steps of SGD with momentum on one batch; the losses, and the parameters (float32)
    after the first step."""
    optimizer = torch.optim.SGD(model.parameters(), lr=LR, momentum=MOMENTUM)
    losses, after_one = [], None
    for _ in range(STEPS):
        optimizer.zero_grad()
        loss = F.cross_entropy(model(*inputs), labels)
        loss.backward()
        losses.append(loss.item())
        optimizer.step()
        if after_one is None:
            after_one = {k: p.detach().float().clone() for k, p in model.named_parameters()}
    return losses, after_one


def make(out, name):
    torch.manual_seed(SEED)
    model = without_dropout(MODELS[name]())
    model.train()
    tokens = isinstance(model, Encoder)
    if tokens:
        inputs = {"tokens": torch.randint(0, 20, (BATCH, 6))}
        if model.padded:  # rows of 6, 4, 5 and 3 tokens: the rest is padding
            lengths = torch.tensor([6, 4, 5, 3])
            inputs["pad"] = torch.arange(6).unsqueeze(0) >= lengths.unsqueeze(1)
    else:
        inputs = {"x": torch.randn(BATCH, 3, 64, 64)}
    names = list(inputs)
    x = tuple(inputs.values())
    labels = torch.randint(0, 3 if tokens else 10, (BATCH,))
    for opset in OPSETS:
        # Export from a copy: tracing runs the model once, updating its batch norms' statistics.
        exported = without_dropout(MODELS[name]())
        exported.load_state_dict(model.state_dict())
        exported.train()
        axes = {n: {0: "batch"} for n in names}
        axes["logits"] = {0: "batch"}
        torch.onnx.export(exported, x, os.path.join(out, "%s_opset%d.onnx" % (name, opset)),
                          input_names=names, output_names=["logits"], opset_version=opset,
                          dynamic_axes=axes, training=torch.onnx.TrainingMode.TRAINING,
                          do_constant_folding=False)
    init = {k: p.detach().clone() for k, p in model.named_parameters()}
    single = copy.deepcopy(model)  # PyTorch's own float32 run, for how far float32 strays
    losses, after_one = train(model.double(),
                              x if tokens else tuple(t.double() for t in x), labels)
    train(single, x, labels)
    # remat train reads batch k of the file at step k: the one batch, once per step.
    repeat = lambda t: t.unsqueeze(0).expand(STEPS, *t.shape)
    data = {n: repeat(t.int() if t.dtype == torch.int64 else t) for n, t in inputs.items()}
    data["labels"] = repeat(labels.int())
    write(os.path.join(out, name + ".data.safetensors"), data)
    write(os.path.join(out, name + ".init.safetensors"), init)
    write(os.path.join(out, name + ".torch.safetensors"),
                      {k: p.float() for k, p in model.named_parameters()})
    write(os.path.join(out, name + ".torch1.safetensors"), after_one)
    write(os.path.join(out, name + ".torch32.safetensors"),
                      {k: p for k, p in single.named_parameters()})
    print("%s: PyTorch losses %s" % (name, ", ".join("%.6f" % v for v in losses)), flush=True)
    return {"name": name, "opsets": list(OPSETS), "inputs": names, "batch": BATCH,
            "optimizer": OPTIMIZER, "steps": STEPS, "losses": losses, "attention": tokens}


def main(argv):
    if len(argv) < 2:
        raise SystemExit("usage: make_zoo.py DIR [NAME...]   (names: %s)" % ", ".join(MODELS))
    out, names = argv[1], argv[2:] or list(MODELS)
    unknown = [n for n in names if n not in MODELS]
    if unknown:
        raise SystemExit("unknown models: %s (known: %s)" % (", ".join(unknown), ", ".join(MODELS)))
    os.makedirs(out, exist_ok=True)
    torch.set_num_threads(1)
    made = [make(out, name) for name in names]
    with open(os.path.join(out, "zoo.json"), "w") as f:
        json.dump(made, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
