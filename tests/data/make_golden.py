"""Writes the PyTorch golden vectors tests/data/golden_*.safetensors for the built-in templates.

Each model is written here from the formulas in docs/templates.md (not taken from a library), so
its state_dict names are the template's parameter names. It runs in float64 with dropout 0,
starting from parameters and inputs that are exactly representable in float32 (they are drawn,
then rounded to float32), so the float64 run is the reference for a float32 implementation fed
the stored float32 values. Three optimizer steps are taken on the same batch; the loss is
recorded before each step's update, and the eval-mode loss on that batch after the last.

Run: /usr/bin/python3 tests/data/make_golden.py [FILE...]   (Debian's python3-torch; no other
package). With file names, only those files are written.
"""
import json
import math
import os
import struct
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

SEED = 20240607
STEPS = 3
HERE = os.path.dirname(os.path.abspath(__file__))


class Mlp(nn.Module):
    """mlp:layers=L,width=W,in=I,classes=C: fc0..fc{L-1} with relu, then fc{L}."""

    def __init__(self, layers, width, inputs, classes):
        super().__init__()
        self.layers = layers
        for i in range(layers + 1):
            fan_in = inputs if i == 0 else width
            fan_out = classes if i == layers else width
            self.add_module("fc%d" % i, nn.Linear(fan_in, fan_out))

    def forward(self, x):
        h = x
        for i in range(self.layers):
            h = F.relu(getattr(self, "fc%d" % i)(h))
        return getattr(self, "fc%d" % self.layers)(h)


# The transformer's submodules mirror Hugging Face's BERT so that the nested attribute names
# give the state_dict keys of docs/templates.md (encoder.layer.0.attention.self.query.weight).
class Embeddings(nn.Module):
    def __init__(self, vocab, seq, hidden):
        super().__init__()
        self.word_embeddings = nn.Embedding(vocab, hidden)
        self.position_embeddings = nn.Embedding(seq, hidden)
        self.LayerNorm = nn.LayerNorm(hidden, eps=1e-12)

    def forward(self, tokens):
        positions = torch.arange(tokens.shape[1])
        return self.LayerNorm(self.word_embeddings(tokens) + self.position_embeddings(positions))


class SelfAttention(nn.Module):
    def __init__(self, hidden, heads):
        super().__init__()
        self.heads = heads
        self.query = nn.Linear(hidden, hidden)
        self.key = nn.Linear(hidden, hidden)
        self.value = nn.Linear(hidden, hidden)

    def forward(self, x):
        b, s, h = x.shape
        d = h // self.heads

        def split(t):  # [B, S, H] -> [B, A, S, D]
            return t.view(b, s, self.heads, d).transpose(1, 2)

        q, k, v = split(self.query(x)), split(self.key(x)), split(self.value(x))
        p = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(d), dim=-1)
        return (p @ v).transpose(1, 2).reshape(b, s, h)


class AttentionOutput(nn.Module):
    def __init__(self, hidden):
        super().__init__()
        self.dense = nn.Linear(hidden, hidden)
        self.LayerNorm = nn.LayerNorm(hidden, eps=1e-12)


class Attention(nn.Module):
    def __init__(self, hidden, heads):
        super().__init__()
        self.self = SelfAttention(hidden, heads)
        self.output = AttentionOutput(hidden)

    def forward(self, x):
        return self.output.LayerNorm(x + self.output.dense(self.self(x)))


class Dense(nn.Module):
    def __init__(self, fan_in, fan_out, layer_norm):
        super().__init__()
        self.dense = nn.Linear(fan_in, fan_out)
        if layer_norm:
            self.LayerNorm = nn.LayerNorm(fan_out, eps=1e-12)


class Layer(nn.Module):
    def __init__(self, hidden, heads, ffn):
        super().__init__()
        self.attention = Attention(hidden, heads)
        self.intermediate = Dense(hidden, ffn, layer_norm=False)
        self.output = Dense(ffn, hidden, layer_norm=True)

    def forward(self, x):
        x1 = self.attention(x)
        f = self.output.dense(F.gelu(self.intermediate.dense(x1)))  # exact-erf GELU
        return self.output.LayerNorm(x1 + f)


class Encoder(nn.Module):
    def __init__(self, layers, hidden, heads, ffn):
        super().__init__()
        self.layer = nn.ModuleList([Layer(hidden, heads, ffn) for _ in range(layers)])


class Transformer(nn.Module):
    """transformer:layers=L,hidden=H,heads=A,ffn=F,seq=S,vocab=V,classes=C (post-LN BERT)."""

    def __init__(self, layers, hidden, heads, ffn, seq, vocab, classes):
        super().__init__()
        self.embeddings = Embeddings(vocab, seq, hidden)
        self.encoder = Encoder(layers, hidden, heads, ffn)
        self.pooler = Dense(hidden, hidden, layer_norm=False)
        self.classifier = nn.Linear(hidden, classes)

    def forward(self, tokens):
        x = self.embeddings(tokens)
        for layer in self.encoder.layer:
            x = layer(x)
        pooled = torch.tanh(self.pooler.dense(x[:, 0, :]))
        return self.classifier(pooled)


# The convolutional templates, as torchvision writes a ResNet (BasicBlock, downsample) so that
# the state_dict keys are those of docs/templates.md.
class BasicBlock(nn.Module):
    def __init__(self, in_planes, planes, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(in_planes, planes, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.downsample = None
        if stride != 1 or in_planes != planes:
            self.downsample = nn.Sequential(nn.Conv2d(in_planes, planes, 1, stride=stride, bias=False),
                                            nn.BatchNorm2d(planes))

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return F.relu(out + (x if self.downsample is None else self.downsample(x)))


class ResNet(nn.Module):
    """resnet:depth=D,width=W,in=CxHxW,classes=K: the CIFAR ResNet, (D - 2) / 6 blocks a stage."""

    def __init__(self, depth, width, channels, classes):
        super().__init__()
        n = (depth - 2) // 6
        self.conv1 = nn.Conv2d(channels, width, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        in_planes = width
        for stage in range(3):
            blocks = []
            for i in range(n):
                planes = width << stage
                blocks.append(BasicBlock(in_planes, planes, 2 if stage > 0 and i == 0 else 1))
                in_planes = planes
            self.add_module("layer%d" % (stage + 1), nn.Sequential(*blocks))
        self.fc = nn.Linear(in_planes, classes)

    def forward(self, x):
        h = F.relu(self.bn1(self.conv1(x)))
        h = self.layer3(self.layer2(self.layer1(h)))
        return self.fc(F.adaptive_avg_pool2d(h, 1).flatten(1))


class DsBlock(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.depthwise = nn.Conv2d(width, width, 3, padding=1, groups=width, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.pointwise = nn.Conv2d(width, width, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(width)

    def forward(self, x):
        return F.relu(self.bn2(self.pointwise(F.relu(self.bn1(self.depthwise(x))))))


class DsCnn(nn.Module):
    """dscnn:blocks=B,width=W,in=CxHxW,classes=K (Zhang et al. 2017, "Hello Edge")."""

    def __init__(self, blocks, width, channels, classes):
        super().__init__()
        self.conv1 = nn.Conv2d(channels, width, (10, 4), stride=2, padding=(5, 1), bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.blocks = nn.ModuleList([DsBlock(width) for _ in range(blocks)])
        self.fc = nn.Linear(width, classes)

    def forward(self, x):
        h = F.relu(self.bn1(self.conv1(x)))
        for block in self.blocks:
            h = block(h)
        return self.fc(F.adaptive_avg_pool2d(h, 1).flatten(1))


def as_float32_values(t):
    """Rounds |t| to float32 and back, so float32 holds it exactly."""
    return t.float().double()


def init_parameters(model):
    """O(1) values that keep 3 steps stable; normalisations away from 1/0 so their grads matter."""
    norms = {name + "." + p for name, m in model.named_modules() if isinstance(m, nn.BatchNorm2d)
             for p in ("weight", "bias")}
    with torch.no_grad():
        for name, p in model.named_parameters():
            if ".LayerNorm." in name or name in norms:
                base = 1.0 if name.endswith("weight") else 0.0
                p.copy_(base + 0.1 * torch.randn_like(p))
            elif "embeddings" in name:
                p.copy_(0.5 * torch.randn_like(p))
            elif name.endswith("weight"):
                p.copy_(0.3 * torch.randn_like(p))
            else:
                p.copy_(0.1 * torch.randn_like(p))
            p.copy_(as_float32_values(p))


def train(model, optimizer, inputs, labels):
    """Runs STEPS steps on one batch; returns the loss before each step's update."""
    losses = []
    for _ in range(STEPS):
        optimizer.zero_grad()
        loss = F.cross_entropy(model(inputs), labels)
        loss.backward()
        losses.append(loss.item())
        optimizer.step()
    return losses


def write_safetensors(path, tensors, metadata):
    """Writes |tensors| (name -> (dtype, shape, bytes), in order) as the format specifies."""
    header = {"__metadata__": metadata}
    data = b""
    for name, (dtype, shape, blob) in tensors.items():
        header[name] = {"dtype": dtype, "shape": list(shape),
                        "data_offsets": [len(data), len(data) + len(blob)]}
        data += blob
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + data)


def f32(t):
    t = t.detach().contiguous()
    return ("F32", tuple(t.shape), struct.pack("<%df" % t.numel(), *t.double().flatten().tolist()))


def i32(t):
    t = t.detach().contiguous()
    return ("I32", tuple(t.shape), struct.pack("<%di" % t.numel(), *t.flatten().tolist()))


def i64(t):
    t = t.detach().contiguous()
    return ("I64", tuple(t.shape), struct.pack("<%dq" % t.numel(), *t.flatten().tolist()))


def make(filename, template, batch, optimizer_spec, build_model, make_optimizer, make_inputs):
    torch.manual_seed(SEED)
    model = build_model().double()
    init_parameters(model)
    input_name, inputs, labels = make_inputs(batch)
    init = {name: p.detach().clone() for name, p in model.named_parameters()}
    losses = train(model, make_optimizer(model.parameters()), inputs, labels)
    assert losses[0] > losses[1] > losses[2], "%s: loss does not decrease: %s" % (filename, losses)
    model.eval()  # no dropout; batch norms use their running statistics
    with torch.no_grad():
        eval_loss = F.cross_entropy(model(inputs), labels).item()

    tensors = {}
    for name, value in init.items():
        tensors["init." + name] = f32(value)
    for name, p in model.named_parameters():
        tensors["final." + name] = f32(p)
    for name, b in model.named_buffers():  # batch norms' running statistics
        tensors["final." + name] = i64(b) if b.dtype == torch.int64 else f32(b)
    tensors["input." + input_name] = (
        i32(inputs) if input_name == "tokens" else f32(inputs))
    tensors["label.labels"] = i32(labels)
    tensors["loss"] = f32(torch.tensor(losses, dtype=torch.float64))
    tensors["eval_loss"] = f32(torch.tensor([eval_loss], dtype=torch.float64))
    metadata = {
        "template": template,
        "batch": str(batch),
        "optimizer": optimizer_spec,
        "steps": str(STEPS),
        "seed": str(SEED),
        "torch": torch.__version__,
    }
    write_safetensors(os.path.join(HERE, filename), tensors, metadata)
    print("%s: loss %s" % (filename, ", ".join("%.6f" % v for v in losses)))


def make_autocast(filename, template, batch, optimizer_spec, build_model, make_optimizer,
                  make_inputs):
    """The golden of make() with the same initial parameters and batch, trained instead in float32
    under torch.autocast("cpu", dtype=torch.bfloat16): remat's --precision bf16 against it."""
    torch.manual_seed(SEED)
    model = build_model().double()
    init_parameters(model)
    input_name, inputs, labels = make_inputs(batch)
    model = model.float()
    inputs = inputs if input_name == "tokens" else inputs.float()
    init = {name: p.detach().clone() for name, p in model.named_parameters()}
    optimizer = make_optimizer(model.parameters())
    losses = []
    for _ in range(STEPS):
        optimizer.zero_grad()
        with torch.autocast("cpu", dtype=torch.bfloat16):
            loss = F.cross_entropy(model(inputs), labels)
        loss.backward()
        losses.append(loss.item())
        optimizer.step()
    assert losses[0] > losses[1] > losses[2], "%s: loss does not decrease: %s" % (filename, losses)

    tensors = {}
    for name, value in init.items():
        tensors["init." + name] = f32(value)
    for name, p in model.named_parameters():
        tensors["final." + name] = f32(p)
    tensors["input." + input_name] = (
        i32(inputs) if input_name == "tokens" else f32(inputs))
    tensors["label.labels"] = i32(labels)
    tensors["loss"] = f32(torch.tensor(losses, dtype=torch.float64))
    metadata = {
        "template": template,
        "batch": str(batch),
        "optimizer": optimizer_spec,
        "steps": str(STEPS),
        "seed": str(SEED),
        "precision": "bf16",
        "torch": torch.__version__,
    }
    write_safetensors(os.path.join(HERE, filename), tensors, metadata)
    print("%s: loss %s" % (filename, ", ".join("%.6f" % v for v in losses)))


def main():
    torch.set_num_threads(1)

    mlp_template = "mlp:layers=3,width=16,in=8,classes=4"

    def mlp():
        return Mlp(layers=3, width=16, inputs=8, classes=4)

    def mlp_inputs(batch):
        x = as_float32_values(torch.randn(batch, 8, dtype=torch.float64))
        return "x", x, torch.randint(0, 4, (batch,))

    tf_template = "transformer:layers=2,hidden=16,heads=2,ffn=32,seq=6,vocab=20,classes=3"

    def transformer():
        return Transformer(layers=2, hidden=16, heads=2, ffn=32, seq=6, vocab=20, classes=3)

    def tf_inputs(batch):
        return "tokens", torch.randint(0, 20, (batch, 6)), torch.randint(0, 3, (batch,))

    resnet_template = "resnet:depth=8,width=4,in=3x8x8,classes=3"

    def resnet():
        return ResNet(depth=8, width=4, channels=3, classes=3)

    dscnn_template = "dscnn:blocks=2,width=8,in=1x12x6,classes=3"

    def dscnn():
        return DsCnn(blocks=2, width=8, channels=1, classes=3)

    def image_inputs(shape):
        def make_inputs(batch):
            x = as_float32_values(torch.randn(batch, *shape, dtype=torch.float64))
            return "x", x, torch.randint(0, 3, (batch,))
        return make_inputs

    wanted = set(sys.argv[1:])

    made = set()

    def make_if_wanted(filename, *rest):
        made.add(filename)
        if not wanted or filename in wanted:
            make(filename, *rest)

    for name, template, build, shape in (("resnet", resnet_template, resnet, (3, 8, 8)),
                                         ("dscnn", dscnn_template, dscnn, (1, 12, 6))):
        make_if_wanted("golden_%s_sgd.safetensors" % name, template, 4,
                       "sgd:lr=0.05,momentum=0.9,weight_decay=0.01", build,
                       lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9, weight_decay=0.01),
                       image_inputs(shape))
        make_if_wanted("golden_%s_adam.safetensors" % name, template, 4,
                       "adam:lr=0.01,weight_decay=0.01", build,
                       lambda p: torch.optim.Adam(p, lr=0.01, betas=(0.9, 0.999), eps=1e-8,
                                                  weight_decay=0.01), image_inputs(shape))
    make_if_wanted("golden_mlp_sgd.safetensors", mlp_template, 5,
         "sgd:lr=0.1,momentum=0.9,weight_decay=0.01", mlp,
         lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9, weight_decay=0.01), mlp_inputs)
    make_if_wanted("golden_mlp_adam.safetensors", mlp_template, 5,
         "adam:lr=0.01,weight_decay=0.01", mlp,
         lambda p: torch.optim.Adam(p, lr=0.01, betas=(0.9, 0.999), eps=1e-8,
                                    weight_decay=0.01), mlp_inputs)
    make_if_wanted("golden_transformer_adamw.safetensors", tf_template, 3,
         "adamw:lr=0.01,weight_decay=0.01", transformer,
         lambda p: torch.optim.AdamW(p, lr=0.01, betas=(0.9, 0.999), eps=1e-8,
                                     weight_decay=0.01), tf_inputs)
    make_if_wanted("golden_transformer_sgd.safetensors", tf_template, 3,
         "sgd:lr=0.05,momentum=0.9,weight_decay=0", transformer,
         lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9, weight_decay=0), tf_inputs)

    # bfloat16 autocast (CPU) goldens: the same models, batches and initial values.
    def make_autocast_if_wanted(filename, *rest):
        made.add(filename)
        if not wanted or filename in wanted:
            make_autocast(filename, *rest)

    make_autocast_if_wanted("golden_mlp_sgd_bf16.safetensors", mlp_template, 5,
         "sgd:lr=0.1,momentum=0.9,weight_decay=0.01", mlp,
         lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9, weight_decay=0.01), mlp_inputs)
    make_autocast_if_wanted("golden_transformer_sgd_bf16.safetensors", tf_template, 3,
         "sgd:lr=0.05,momentum=0.9,weight_decay=0", transformer,
         lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9, weight_decay=0), tf_inputs)
    make_autocast_if_wanted("golden_resnet_sgd_bf16.safetensors", resnet_template, 4,
         "sgd:lr=0.05,momentum=0.9,weight_decay=0.01", resnet,
         lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9, weight_decay=0.01),
         image_inputs((3, 8, 8)))

    if wanted - made:
        raise SystemExit("unknown golden files: %s (known: %s)" % (sorted(wanted - made), sorted(made)))


if __name__ == "__main__":
    main()
