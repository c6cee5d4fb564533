"""PyTorch CPU baseline for bench/step_time: the same models (docs/templates.md), same batch,
same thread count, median step time with Adam. Optionally with torch.utils.checkpoint.

    /usr/bin/python3 bench/torch_step.py [--threads N] [--steps N] [--checkpoint] MODEL@BATCH ...
"""
import argparse
import math
import statistics
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint


def parse(spec):
    name, _, rest = spec.partition(":")
    return name, {k: float(v) if "." in v else int(v) for k, v in (kv.split("=") for kv in rest.split(","))}


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
        h = x
        every = max(1, round(math.sqrt(len(self.blocks))))
        for i in range(len(self.blocks)):
            if self.ckpt and i % every == 0:
                h = checkpoint(lambda t, i=i: self.block(i, t), h, use_reentrant=False)
            else:
                h = self.block(i, h)
        return self.head(h)


class Block(nn.Module):
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
        p = F.dropout(torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(d), -1), self.p, self.training)
        c = (p @ v).transpose(1, 2).reshape(b, s, h)
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
        every = max(1, round(math.sqrt(len(self.layers))))
        for i, layer in enumerate(self.layers):
            x = checkpoint(layer, x, use_reentrant=False) if self.ckpt and i % every == 0 else layer(x)
        return self.cls(F.dropout(torch.tanh(self.pool(x[:, 0])), self.p, self.training))


def measure(spec, steps, warmup, ckpt):
    model_spec, batch = spec.rsplit("@", 1)
    batch = int(batch)
    name, kw = parse(model_spec)
    if name == "mlp":
        model = Mlp(kw["layers"], kw["width"], kw["in"], kw["classes"], kw.get("dropout", 0.0), ckpt)
        data = torch.rand(batch, kw["in"]) * 2 - 1
    else:
        model = Bert(kw["layers"], kw["hidden"], kw["heads"], kw["ffn"], kw["seq"], kw["vocab"], kw["classes"],
                     kw.get("dropout", 0.0), ckpt)
        data = torch.randint(0, kw["vocab"], (batch, kw["seq"]))
    labels = torch.randint(0, kw["classes"], (batch,))
    opt = torch.optim.Adam(model.parameters(), lr=1e-4)
    times = []
    for s in range(warmup + steps):
        start = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        F.cross_entropy(model(data), labels).backward()
        opt.step()
        if s >= warmup:
            times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times), min(times)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--checkpoint", action="store_true", help="also run with torch.utils.checkpoint")
    ap.add_argument("specs", nargs="+")
    args = ap.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    print(f"# PyTorch {torch.__version__} CPU, {torch.get_num_threads()} threads; median of {args.steps} steps")
    print("| model | batch | mode | median ms | min ms |")
    print("|---|---|---|---|---|")
    for spec in args.specs:
        for ckpt in ([False, True] if args.checkpoint else [False]):
            med, low = measure(spec, args.steps, args.warmup, ckpt)
            model, batch = spec.rsplit("@", 1)
            print(f"| {model} | {batch} | {'checkpoint sqrt' if ckpt else 'eager'} | {med:.1f} | {low:.1f} |", flush=True)


if __name__ == "__main__":
    main()
