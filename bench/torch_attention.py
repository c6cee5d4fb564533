"""PyTorch's fused attention, forward and backward, at the shapes of a remat attention op: the
baseline of the `attention` and `attention_grad` rows of `bench/op_profile` (docs/benchmarks.md).
torch.nn.functional.scaled_dot_product_attention on [B, heads, S, D] float32 tensors (TF32 off),
dropout 0 or --dropout P, median of --steps runs after 2 warm-up, each forward + backward timed
alone (synchronised). It measures; it asserts nothing. Needs PyTorch 2.0 or later (the GPU
machines' PyTorch; Debian 12's 1.13 has no scaled_dot_product_attention).

    python3 bench/torch_attention.py [--device cuda] [--steps N] [--dropout P] B,HEADS,S,D ...
"""
import argparse
import statistics
import time

import torch
import torch.nn.functional as F


def sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def measure(shape, steps, p, device):
    b, heads, s, d = shape
    q, k, v = (torch.randn(b, heads, s, d, device=device, requires_grad=True) for _ in range(3))
    grad = torch.randn(b, heads, s, d, device=device)
    forward, total = [], []
    for i in range(steps + 2):
        sync(device)
        start = time.perf_counter()
        out = F.scaled_dot_product_attention(q, k, v, dropout_p=p)
        sync(device)
        middle = time.perf_counter()
        out.backward(grad)
        sync(device)
        end = time.perf_counter()
        if i >= 2:
            forward.append((middle - start) * 1e3)
            total.append((end - start) * 1e3)
    return statistics.median(forward), statistics.median(total)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--dropout", type=float, default=0.0)
    ap.add_argument("shapes", nargs="+", help="B,HEADS,S,D")
    args = ap.parse_args()
    if not hasattr(F, "scaled_dot_product_attention"):
        raise SystemExit(f"torch_attention: PyTorch {torch.__version__} has no "
                         "scaled_dot_product_attention (2.0 or later needed)")
    device = torch.device(args.device)
    if device.type == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = False
        name = torch.cuda.get_device_name(device)
    else:
        name = f"CPU, {torch.get_num_threads()} threads"
    print(f"# PyTorch {torch.__version__} scaled_dot_product_attention on {name}; float32, dropout "
          f"{args.dropout}; median of {args.steps}")
    print("| B, heads, S, D | forward ms | forward + backward ms |")
    print("|---|---|---|")
    for text in args.shapes:
        shape = tuple(int(x) for x in text.split(","))
        fwd, both = measure(shape, args.steps, args.dropout, device)
        print(f"| {text} | {fwd:.2f} | {both:.2f} |", flush=True)


if __name__ == "__main__":
    main()
