"""PyTorch baseline for bench/step_time: the same models (docs/templates.md: mlp, transformer, and
resnet as tests/data/make_golden.py writes it), same batch,
same thread count, median step time with Adam. Optionally with torch.utils.checkpoint in Chen's
sqrt(n) segmentation (--checkpoint: the L blocks split into round(sqrt(L)) consecutive segments
of about sqrt(L) blocks, every segment checkpointed, the mode remat's `sqrt` strategy matches),
on a CUDA device (--device cuda), or the largest batch within a device memory cap (--budget GiB).
--bf16 runs forward and loss under torch.autocast(bfloat16) (float32 master weights, as remat's
--precision bf16); --sdpa computes attention with F.scaled_dot_product_attention (fused kernels).

    /usr/bin/python3 bench/torch_step.py [--threads N] [--steps N] [--checkpoint] MODEL@BATCH ...
    python3 bench/torch_step.py --device cuda [--budget GIB] [--checkpoint] MODEL@BATCH ...
"""
import argparse
import math
import os
import statistics
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data"))
from make_golden import ResNet as GoldenResNet  # noqa: E402


def parse(spec):
    name, _, rest = spec.partition(":")
    value = lambda v: v if "x" in v else float(v) if "." in v else int(v)
    return name, {k: value(v) for k, v in (kv.split("=") for kv in rest.split(","))}


def segments(count):
    """Chen's sqrt(n) segmentation of |count| blocks: round(sqrt(count)) consecutive segments
    whose sizes differ by at most one, as (start, end) index pairs."""
    n = max(1, round(math.sqrt(count)))
    bounds = [round(i * count / n) for i in range(n + 1)]
    return [(a, b) for a, b in zip(bounds, bounds[1:]) if b > a]


def run_blocks(blocks, h, ckpt):
    """Runs |blocks| (callables) in order. With |ckpt|, every sqrt segment runs under
    torch.utils.checkpoint: only its input is kept, its inside is recomputed in backward."""
    if not ckpt:
        for block in blocks:
            h = block(h)
        return h
    for a, b in segments(len(blocks)):
        def segment(t, part=blocks[a:b]):
            for block in part:
                t = block(t)
            return t
        h = checkpoint(segment, h, use_reentrant=False)
    return h


class Mlp(nn.Module):
    def __init__(self, layers, width, inp, classes, dropout=0.0, ckpt=False):
        super().__init__()
        dims = [inp] + [width] * layers
        self.blocks = nn.ModuleList(nn.Linear(dims[i], width) for i in range(layers))
        self.head = nn.Linear(width, classes)
        self.p, self.ckpt = dropout, ckpt

    def block(self, i, h):
        return F.dropout(F.relu(self.blocks[i](h)), self.p, self.training)

    def forward(self, x):
        blocks = [lambda t, i=i: self.block(i, t) for i in range(len(self.blocks))]
        return self.head(run_blocks(blocks, x, self.ckpt))


class Block(nn.Module):
    sdpa = False  # set by --sdpa: fused scaled_dot_product_attention instead of softmax(QK^T)V

    def __init__(self, hidden, heads, ffn, p):
        super().__init__()
        self.q, self.k, self.v, self.o = (nn.Linear(hidden, hidden) for _ in range(4))
        self.ln1, self.ln2 = nn.LayerNorm(hidden, eps=1e-12), nn.LayerNorm(hidden, eps=1e-12)
        self.f1, self.f2 = nn.Linear(hidden, ffn), nn.Linear(ffn, hidden)
        self.heads, self.p = heads, p

    def forward(self, x):
        b, s, h = x.shape
        d = h // self.heads
        split = lambda t: t.view(b, s, self.heads, d).transpose(1, 2)
        q, k, v = split(self.q(x)), split(self.k(x)), split(self.v(x))
        if Block.sdpa:
            c = F.scaled_dot_product_attention(q, k, v, dropout_p=self.p if self.training else 0.0)
        else:
            p = F.dropout(torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(d), -1), self.p, self.training)
            c = p @ v
        c = c.transpose(1, 2).reshape(b, s, h)
        x = self.ln1(x + F.dropout(self.o(c), self.p, self.training))
        return self.ln2(x + F.dropout(self.f2(F.gelu(self.f1(x))), self.p, self.training))


class Bert(nn.Module):
    def __init__(self, layers, hidden, heads, ffn, seq, vocab, classes, dropout=0.0, ckpt=False):
        super().__init__()
        self.words, self.pos = nn.Embedding(vocab, hidden), nn.Embedding(seq, hidden)
        self.ln = nn.LayerNorm(hidden, eps=1e-12)
        self.layers = nn.ModuleList(Block(hidden, heads, ffn, dropout) for _ in range(layers))
        self.pool, self.cls = nn.Linear(hidden, hidden), nn.Linear(hidden, classes)
        self.p, self.ckpt = dropout, ckpt

    def forward(self, tokens):
        x = self.ln(self.words(tokens) + self.pos.weight)
        x = F.dropout(x, self.p, self.training)
        x = run_blocks(list(self.layers), x, self.ckpt)
        return self.cls(F.dropout(torch.tanh(self.pool(x[:, 0])), self.p, self.training))


class ResNet(GoldenResNet):
    """The resnet template (make_golden's module, whose state_dict keys are the template's), its
    blocks run by run_blocks so that --checkpoint segments them as the other models."""

    def __init__(self, depth, width, channels, classes, ckpt=False):
        super().__init__(depth, width, channels, classes)
        self.ckpt = ckpt

    def forward(self, x):
        h = F.relu(self.bn1(self.conv1(x)))
        h = run_blocks([*self.layer1, *self.layer2, *self.layer3], h, self.ckpt)
        return self.fc(F.adaptive_avg_pool2d(h, 1).flatten(1))


def sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def measure(spec, steps, warmup, ckpt, device=torch.device("cpu"), bf16=False):
    model_spec, batch = spec.rsplit("@", 1)
    batch = int(batch)
    name, kw = parse(model_spec)
    if name == "mlp":
        model = Mlp(kw["layers"], kw["width"], kw["in"], kw["classes"], kw.get("dropout", 0.0), ckpt)
        data = torch.rand(batch, kw["in"]) * 2 - 1
    elif name == "resnet":
        channels, height, width = (int(d) for d in kw["in"].split("x"))
        model = ResNet(kw["depth"], kw.get("width", 16), channels, kw["classes"], ckpt)
        data = torch.rand(batch, channels, height, width) * 2 - 1
    else:
        model = Bert(kw["layers"], kw["hidden"], kw["heads"], kw["ffn"], kw["seq"], kw["vocab"], kw["classes"],
                     kw.get("dropout", 0.0), ckpt)
        data = torch.randint(0, kw["vocab"], (batch, kw["seq"]))
    labels = torch.randint(0, kw["classes"], (batch,))
    model, data, labels = model.to(device), data.to(device), labels.to(device)
    opt = torch.optim.Adam(model.parameters(), lr=1e-4)
    times = []
    for s in range(warmup + steps):
        sync(device)
        start = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=bf16):
            loss = F.cross_entropy(model(data), labels)
        loss.backward()
        opt.step()
        sync(device)
        if s >= warmup:
            times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times), min(times)


def max_batch(model_spec, ckpt, device, bf16, limit=1 << 16):
    """Largest power-of-two batch whose training step runs within the device memory cap."""
    best, batch = 0, 1
    while batch <= limit:
        try:
            measure(f"{model_spec}@{batch}", 1, 1, ckpt, device, bf16)
            best, batch = batch, batch * 2
        except torch.cuda.OutOfMemoryError:
            break
        finally:
            torch.cuda.empty_cache()
    return best


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--checkpoint", action="store_true", help="also run with torch.utils.checkpoint in sqrt "
                    "segments (mode 'checkpoint sqrt': ~sqrt(L) segments of ~sqrt(L) blocks, each checkpointed)")
    ap.add_argument("--device", default="cpu", help="cpu or cuda[:N]")
    ap.add_argument("--budget", default="", help="cuda only: cap device memory at this many GiB and report "
                    "the largest power-of-two batch of each MODEL (given as MODEL@ANY) instead of step times")
    ap.add_argument("--tf32", action="store_true", help="cuda only: let matmuls use TF32 (as remat's "
                    "--matmul-precision tf32); without it, plain FP32 like remat's default")
    ap.add_argument("--bf16", action="store_true", help="forward and loss under torch.autocast(bfloat16)")
    ap.add_argument("--sdpa", action="store_true", help="attention by F.scaled_dot_product_attention")
    ap.add_argument("specs", nargs="+")
    args = ap.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    if device.type == "cuda" and device.index is None:
        device = torch.device("cuda", torch.cuda.current_device())  # the memory cap needs an index
    Block.sdpa = args.sdpa
    mode = " + ".join(["bf16 autocast"] * args.bf16 + ["sdpa"] * args.sdpa)
    mode = f", {mode}" if mode else ""
    if device.type == "cuda":
        # Plain FP32 like remat's default cuBLAS settings, or TF32 like --matmul-precision tf32.
        torch.backends.cuda.matmul.allow_tf32 = args.tf32
        torch.backends.cudnn.allow_tf32 = args.tf32
        name = torch.cuda.get_device_name(device)
        if args.budget:
            total = torch.cuda.get_device_properties(device).total_memory
            torch.cuda.set_per_process_memory_fraction(min(1.0, float(args.budget) * 2**30 / total), device)
            print(f"# PyTorch {torch.__version__} on {name}{mode}: largest power-of-two batch within {args.budget} GiB")
            print("| model | mode | max batch |")
            print("|---|---|---|")
            for spec in args.specs:
                model = spec.rsplit("@", 1)[0]
                for ckpt in ([False, True] if args.checkpoint else [False]):
                    print(f"| {model} | {'checkpoint sqrt' if ckpt else 'eager'} | {max_batch(model, ckpt, device, args.bf16)} |",
                          flush=True)
            return
        print(f"# PyTorch {torch.__version__} on {name}{mode}; float32 matmuls in {'TF32' if args.tf32 else 'FP32'}; "
              f"median of {args.steps} steps")
    else:
        print(f"# PyTorch {torch.__version__} CPU{mode}, {torch.get_num_threads()} threads; median of {args.steps} steps")
    print("| model | batch | mode | median ms | min ms |")
    print("|---|---|---|---|---|")
    for spec in args.specs:
        for ckpt in ([False, True] if args.checkpoint else [False]):
            med, low = measure(spec, args.steps, args.warmup, ckpt, device, args.bf16)
            model, batch = spec.rsplit("@", 1)
            print(f"| {model} | {batch} | {'checkpoint sqrt' if ckpt else 'eager'} | {med:.1f} | {low:.1f} |", flush=True)


if __name__ == "__main__":
    main()
