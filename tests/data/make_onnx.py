"""Writes the ONNX import test models tests/data/onnx/*.onnx and their PyTorch golden vectors
tests/data/golden_onnx_*.safetensors.

Each model is a PyTorch module (the templates' modules of make_golden.py, and a conv-pool net
defined here) whose parameters are drawn and rounded to float32, exported with
torch.onnx.export in training mode (batch norms stay batch norms), then trained in float64 for a
few steps from those same values on one batch, as make_golden.py does. The golden file holds the
batch, the loss before each step's update, and the parameters and batch norm buffers after the
last step, under their state_dict names, which the export gives the initializers. A model
exported in eval mode (its batch norms folded into the convolutions by the exporter) is written
too, without goldens: the importer must warn about the parameters export renamed; and a model
with an op the importer does not take (TopK).

Run: /usr/bin/python3 tests/data/make_onnx.py   (Debian's python3-torch; no other package)
"""
import copy
import math
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

from make_golden import (DsCnn, Mlp, ResNet, STEPS, Transformer, as_float32_values, f32, i32, i64,
                         init_parameters, train, write_safetensors)

SEED = 20241124
HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "onnx")


class ConvPool(nn.Module):
    """Two conv-BN-ReLU-max-pool stages (the second with ceil mode), then a linear classifier."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 4, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(4)
        self.conv2 = nn.Conv2d(4, 6, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(6)
        self.fc = nn.Linear(6 * 2 * 2, 3)

    def forward(self, x):
        h = F.max_pool2d(F.relu(self.bn1(self.conv1(x))), 2)
        h = F.max_pool2d(F.relu(self.bn2(self.conv2(h))), 2, ceil_mode=True)
        return self.fc(torch.flatten(h, 1))


class GptBlock(nn.Module):
    """A pre-LN GPT block: one fused q/k/v projection split three ways (no bias, whose key part
    would have no gradient), attention without a mask, and an exact-GELU MLP."""

    def __init__(self, hidden, heads):
        super().__init__()
        self.heads = heads
        self.ln_1 = nn.LayerNorm(hidden)
        self.c_attn = nn.Linear(hidden, 3 * hidden, bias=False)
        self.c_proj = nn.Linear(hidden, hidden)
        self.ln_2 = nn.LayerNorm(hidden)
        self.c_fc = nn.Linear(hidden, 4 * hidden)
        self.mlp_proj = nn.Linear(4 * hidden, hidden)

    def forward(self, x):
        b, s, h = x.shape
        q, k, v = self.c_attn(self.ln_1(x)).split(h, dim=2)
        heads = lambda t: t.reshape(b, s, self.heads, h // self.heads).transpose(1, 2)
        q, k, v = heads(q), heads(k), heads(v)
        p = torch.softmax(q @ k.transpose(-1, -2) * (1.0 / math.sqrt(h // self.heads)), dim=-1)
        x = x + self.c_proj((p @ v).transpose(1, 2).reshape(b, s, h))
        return x + self.mlp_proj(F.gelu(self.c_fc(self.ln_2(x))))


class Gpt(nn.Module):
    """Token and position embeddings, GPT blocks, a final LayerNorm, the last token classified."""

    def __init__(self, layers, hidden, heads, seq, vocab, classes):
        super().__init__()
        self.wte = nn.Embedding(vocab, hidden)
        self.wpe = nn.Embedding(seq, hidden)
        self.h = nn.ModuleList([GptBlock(hidden, heads) for _ in range(layers)])
        self.ln_f = nn.LayerNorm(hidden)
        self.head = nn.Linear(hidden, classes)

    def forward(self, tokens):
        x = self.wte(tokens) + self.wpe(torch.arange(tokens.shape[1]))
        for block in self.h:
            x = block(x)
        return self.head(self.ln_f(x)[:, -1])


class NegMlp(nn.Module):
    """An MLP whose hidden layer is negated (Neg) and subtracted from a second branch (Sub)."""

    def __init__(self):
        super().__init__()
        self.fc0 = nn.Linear(8, 16)
        self.fc1 = nn.Linear(8, 16)
        self.fc2 = nn.Linear(16, 4)

    def forward(self, x):
        return self.fc2(torch.tanh(-self.fc0(x) - self.fc1(x) * 0.5))


class Regressor(nn.Module):
    """A regressor that computes its own loss, mean((y - target)^2), from operators torch exports
    one by one: LeakyRelu; a learned per-feature scale (Mul by a parameter, broadcast over the
    batch); an RMS normalisation (ReduceMean with keepdims, Sub and Div of computed tensors
    broadcast along the last axis, Pow, Add of a constant, Sqrt); Erf and LogSoftmax; a sum over
    the batch axis (ReduceSum) broadcast back; a Cast; the loss's Sub, Pow and ReduceMean over
    every axis."""

    def __init__(self):
        super().__init__()
        self.fc0 = nn.Linear(8, 16)
        self.scale = nn.Parameter(torch.ones(16))
        self.fc1 = nn.Linear(16, 4)

    def forward(self, x, target):
        h = F.leaky_relu(self.fc0(x), 0.1) * self.scale
        h = h - h.mean(-1, keepdim=True)
        h = h / torch.sqrt(h.pow(2).mean(-1, keepdim=True) + 1e-5)
        h = torch.erf(h) + 0.1 * torch.log_softmax(h, -1)
        y = self.fc1(h)
        y = y + y.sum(0, keepdim=True) * 0.02
        return ((y.float() - target) ** 2).mean()


class Reducer(nn.Module):
    """Reductions over axes that are not neighbours (a mean over axes 1 and 3), a sum over the
    last two, and a mean kept as a middle axis of 1 broadcast back: x [B, 3, 4, 5]."""

    def __init__(self):
        super().__init__()
        self.fc0 = nn.Linear(5, 5)
        self.fc1 = nn.Linear(4 + 3, 3)

    def forward(self, x):
        h = torch.tanh(self.fc0(x))
        h = h - h.mean(2, keepdim=True)
        return self.fc1(torch.cat([h.mean((1, 3)), h.pow(2).sum((2, 3))], dim=1))


def make_regressor(name, opset, optimizers, batch=5):
    """Exports Regressor with its loss (inputs `x` and `target`, output the scalar loss) and
    writes goldens as make() does, the loss being the model's own."""
    torch.manual_seed(SEED)
    model = Regressor().double()
    init_parameters(model)
    x = as_float32_values(torch.randn(batch, 8, dtype=torch.float64))
    target = as_float32_values(torch.randn(batch, 4, dtype=torch.float64))
    torch.onnx.export(copy.deepcopy(model).float(), (x.float(), target.float()), os.path.join(OUT, name + ".onnx"),
                      input_names=["x", "target"], output_names=["loss"], opset_version=opset,
                      dynamic_axes={"x": {0: "batch"}, "target": {0: "batch"}},
                      training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False)
    for spec, make_optimizer in optimizers:
        trained = copy.deepcopy(model)
        optimizer = make_optimizer(trained.parameters())
        losses = []
        for _ in range(STEPS):
            optimizer.zero_grad()
            loss = trained(x, target)
            loss.backward()
            losses.append(loss.item())
            optimizer.step()
        assert losses[0] > losses[-1], "%s: loss does not decrease: %s" % (name, losses)
        tensors = {"input.x": f32(x), "input.target": f32(target),
                   "loss": f32(torch.tensor(losses, dtype=torch.float64))}
        for key, value in model.state_dict().items():
            tensors["init." + key] = f32(value)
        for key, value in trained.state_dict().items():
            tensors["final." + key] = f32(value)
        kind = spec.split(":")[0]
        metadata = {"model": "onnx/%s.onnx" % name, "batch": str(batch), "optimizer": spec, "steps": str(STEPS),
                    "seed": str(SEED), "torch": torch.__version__, "loss": ""}
        write_safetensors(os.path.join(HERE, "golden_onnx_%s_%s.safetensors" % (name, kind)), tensors, metadata)
        print("%s (%s): loss %s" % (name, kind, ", ".join("%.6f" % v for v in losses)))


class Kws(nn.Module):
    """A keyword-spotting net's tail: conv-BN-ReLU over a 16 x 10 feature map, then a global
    average pool written as torch users write it, avg_pool2d over the map's own shape (one 16 x 10
    window, not a square one), and a linear classifier."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 6, 3, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(6)
        self.fc = nn.Linear(6, 3)

    def forward(self, x):
        h = F.relu(self.bn(self.conv(x)))
        return self.fc(torch.flatten(F.avg_pool2d(h, h.shape[-2:]), 1))


class ShapeScaledAttention(nn.Module):
    """One attention layer whose scale is computed from the input's shape, as people write it:
    (D // heads) ** 0.5 with D = x.shape[-1], which export writes as Shape, Gather, Div, Cast and
    Pow on constants. Then the first token is classified."""

    def __init__(self, hidden, heads, seq, vocab, classes):
        super().__init__()
        self.heads = heads
        self.embed = nn.Embedding(vocab, hidden)
        self.pos = nn.Embedding(seq, hidden)
        self.query = nn.Linear(hidden, hidden)
        self.key = nn.Linear(hidden, hidden, bias=False)
        self.value = nn.Linear(hidden, hidden)
        self.out = nn.Linear(hidden, classes)

    def forward(self, tokens):
        x = self.embed(tokens) + self.pos(torch.arange(tokens.shape[1]))
        b, s, d = x.shape
        split = lambda t: t.reshape(b, s, self.heads, d // self.heads).transpose(1, 2)
        q, k, v = split(self.query(x)), split(self.key(x)), split(self.value(x))
        scale = (x.shape[-1] // self.heads) ** 0.5
        p = torch.softmax(q @ k.transpose(-1, -2) / scale, dim=-1)
        h = (p @ v).transpose(1, 2).reshape(b, s, d)
        return self.out(torch.tanh(h[:, 0]))


class DropoutMlp(nn.Module):
    """A linear layer, dropout 0.25, another linear layer."""

    def __init__(self):
        super().__init__()
        self.fc0 = nn.Linear(8, 16)
        self.drop = nn.Dropout(0.25)
        self.fc1 = nn.Linear(16, 4)

    def forward(self, x):
        return self.fc1(self.drop(F.relu(self.fc0(x))))


class TopTwo(nn.Module):
    """A linear layer, then torch.topk: an op (TopK) the importer does not take."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x):
        return torch.topk(self.fc(x), 2).values


def export(model, example, path, opset, dynamic_batch, training, input_name="x"):
    torch.onnx.export(model, example, path, input_names=[input_name], output_names=["logits"], opset_version=opset,
                      dynamic_axes={input_name: {0: "batch"}, "logits": {0: "batch"}} if dynamic_batch else None,
                      training=torch.onnx.TrainingMode.TRAINING if training else torch.onnx.TrainingMode.EVAL,
                      do_constant_folding=not training)


def with_loss(model):
    """|model| computing F.cross_entropy of its logits against a second input, `labels`, with the
    same state_dict names (its class is swapped for a subclass, not wrapped)."""
    base = type(model)
    lossy = copy.deepcopy(model)
    lossy.__class__ = type(base.__name__ + "WithLoss", (base,),
                           {"forward": lambda self, x, labels: F.cross_entropy(base.forward(self, x), labels)})
    return lossy


def make(name, build, shape, batch, classes, opset, dynamic_batch, optimizers, vocab=0, loss_in_graph=False):
    """|shape| is a sample's; with |vocab|, the input is `tokens` of ids below it, else `x`. With
    |loss_in_graph|, the export computes the loss (SoftmaxCrossEntropyLoss) from a `labels` input."""
    torch.manual_seed(SEED)
    model = build().double()
    init_parameters(model)
    if vocab:
        input_name, x = "tokens", torch.randint(0, vocab, (batch, *shape))
    else:
        input_name, x = "x", as_float32_values(torch.randn(batch, *shape, dtype=torch.float64))
    labels = torch.randint(0, classes, (batch,))
    exported = copy.deepcopy(model).float()
    if loss_in_graph:
        torch.onnx.export(with_loss(exported), (x.float(), labels), os.path.join(OUT, name + ".onnx"),
                          input_names=[input_name, "labels"], output_names=["loss"], opset_version=opset,
                          dynamic_axes={input_name: {0: "batch"}, "labels": {0: "batch"}},
                          training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False)
    else:
        export(exported, x if vocab else x.float(), os.path.join(OUT, name + ".onnx"), opset, dynamic_batch, True,
               input_name)
    # Tracing ran the model once in training mode, so the batch norms' running statistics the
    # file holds are those after that pass: training starts from them too. num_batches_tracked
    # is not exported, and starts at 0 on both sides.
    with torch.no_grad():
        for (key, ours), theirs in zip(model.state_dict().items(), exported.state_dict().values()):
            if key.endswith("running_mean") or key.endswith("running_var"):
                ours.copy_(theirs.double())
    for spec, make_optimizer in optimizers:
        trained = copy.deepcopy(model)
        losses = train(trained, make_optimizer(trained.parameters()), x, labels)
        assert losses[0] > losses[-1], "%s: loss does not decrease: %s" % (name, losses)
        tensors = {"input." + input_name: i32(x) if vocab else f32(x), "label.labels": i32(labels),
                   "loss": f32(torch.tensor(losses, dtype=torch.float64))}
        for key, value in model.state_dict().items():
            tensors["init." + key] = i64(value) if value.dtype == torch.int64 else f32(value)
        for key, value in trained.state_dict().items():
            tensors["final." + key] = i64(value) if value.dtype == torch.int64 else f32(value)
        kind = spec.split(":")[0]
        metadata = {"model": "onnx/%s.onnx" % name, "batch": str(batch), "optimizer": spec, "steps": str(STEPS),
                    "seed": str(SEED), "torch": torch.__version__, "loss": "" if loss_in_graph else "cross_entropy"}
        write_safetensors(os.path.join(HERE, "golden_onnx_%s_%s.safetensors" % (name, kind)), tensors, metadata)
        print("%s (%s): loss %s" % (name, kind, ", ".join("%.6f" % v for v in losses)))
    return model


def main():
    torch.set_num_threads(1)
    os.makedirs(OUT, exist_ok=True)
    sgd = ("sgd:lr=0.05,momentum=0.9,weight_decay=0.01",
           lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9, weight_decay=0.01))
    adam = ("adam:lr=0.01,weight_decay=0.01",
            lambda p: torch.optim.Adam(p, lr=0.01, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01))
    make("mlp", lambda: Mlp(layers=3, width=16, inputs=8, classes=4), (8,), 5, 4, 13, True, [sgd, adam])
    make("convpool", ConvPool, (3, 8, 8), 4, 3, 17, True, [sgd])
    make("negmlp", NegMlp, (8,), 5, 4, 17, True, [sgd])
    make("mlp_loss", lambda: Mlp(layers=2, width=16, inputs=8, classes=4), (8,), 5, 4, 17, True, [adam],
         loss_in_graph=True)
    make_regressor("regressor", 13, [sgd, adam])
    make("reducer", Reducer, (3, 4, 5), 4, 3, 17, True, [sgd])
    make("resnet", lambda: ResNet(depth=8, width=4, channels=3, classes=3), (3, 8, 8), 4, 3, 15, True, [sgd, adam])
    make("dscnn", lambda: DsCnn(blocks=2, width=8, channels=1, classes=3), (1, 12, 6), 4, 3, 17, False, [sgd])
    # A BERT-like encoder (the transformer template's module) and a GPT-like classifier: token
    # ids in, MatMul/Softmax/LayerNormalization/Erf/Split/Transpose/Gather inside.
    make("bert", lambda: Transformer(layers=2, hidden=16, heads=2, ffn=32, seq=6, vocab=20, classes=3), (6,), 3, 3,
         17, True, [sgd], vocab=20)
    make("gpt", lambda: Gpt(layers=2, hidden=16, heads=2, seq=6, vocab=20, classes=3), (6,), 3, 3, 17, True,
         [sgd, adam], vocab=20)
    # Opset 13: torch writes each LayerNorm as ReduceMean/Sub/Pow/ReduceMean/Add/Sqrt/Div/Mul/Add.
    make("bert_opset13", lambda: Transformer(layers=1, hidden=16, heads=2, ffn=32, seq=6, vocab=20, classes=3), (6,),
         3, 3, 13, True, [sgd], vocab=20)
    # Shapes the importer folds or pools that a hand-written model would not have (issue 39).
    make("kws", Kws, (1, 16, 10), 4, 3, 17, False, [sgd])
    make("shape_attention", lambda: ShapeScaledAttention(hidden=8, heads=2, seq=5, vocab=12, classes=3), (5,), 3,
         3, 17, True, [sgd], vocab=12)
    # Eval mode with constant folding: the exporter folds each batch norm into its convolution
    # and names the folded weights itself.
    torch.manual_seed(SEED)
    folded = ConvPool()
    folded.eval()
    export(folded, torch.randn(2, 3, 8, 8), os.path.join(OUT, "convpool_eval.onnx"), 17, True, False)
    export(TopTwo(), torch.randn(2, 8), os.path.join(OUT, "unsupported.onnx"), 17, True, False)
    # Dropout in both modes: a training-mode export keeps the node and its ratio.
    export(DropoutMlp(), torch.randn(2, 8), os.path.join(OUT, "dropout_train.onnx"), 17, True, True)
    export(DropoutMlp().eval(), torch.randn(2, 8), os.path.join(OUT, "dropout_eval.onnx"), 17, True, False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
