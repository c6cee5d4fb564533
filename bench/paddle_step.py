"""PaddlePaddle peer of bench/torch_step.py on the CPU, dygraph (eager) mode: the same models
(Mlp, Bert, ResNet; NCHW, as torch), batch, paddle.optimizer.Adam (lr 1e-4, betas 0.9/0.999, eps 1e-8: torch's update
in another arrangement) and table. Modes: `eager`, and `checkpoint sqrt`: Chen's sqrt segments
(bench/torch_step.py's segmentation) each under paddle.distributed.fleet.utils.recompute with
use_reentrant=False, the hook form torch_step.py's torch.utils.checkpoint call takes.

Threads: the CPU wheel computes with MKL (mklml, built 20190808) and oneDNN on Intel OpenMP,
whose pools are sized when paddle loads, so --threads N sets OMP_NUM_THREADS and MKL_NUM_THREADS
before the import and then paddle's own math-library count (core.set_num_threads; paddle's
default is 1). Without --threads, N is the number of CPUs the process may run on.

MKL on an AMD CPU: that MKL dispatches AMD CPUs to its generic SSE kernels, which here ran a
256x1024x1024 product in 7.1 ms on 2 threads against 2.6 ms on its AVX2 kernels, and in 39 ms
once paddle's Adam kernel had run (SGD's did not do it; the AVX2 kernels do not slow down; the
cause was not found): every step from the second on took 5x the first. On an AMD CPU the script
therefore sets MKL_DEBUG_CPU_TYPE=5 (that MKL's switch to its AVX2 kernels) unless it is set
already or --mkl-as-shipped is given; the header says which.

    PY=$(bash bench/peers_venv.sh | tail -1)
    $PY bench/paddle_step.py [--threads N] [--steps N] [--warmup N] MODEL@BATCH ...
    $PY bench/paddle_step.py --check
"""
import argparse
import logging
import math
import os
import sys
import warnings

# numpy's own OpenBLAS (peer_common imports numpy) serves only the --check's float64 reference:
# its idle threads must not take a core from the peer's.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
import peer_common as pc  # noqa: E402

MODES = ["eager", "checkpoint sqrt"]


def run_blocks(blocks, h, ckpt):
    if not ckpt:
        for block in blocks:
            h = block(h)
        return h
    for a, b in pc.segments(len(blocks)):
        def segment(t, part=blocks[a:b]):
            for block in part:
                t = block(t)
            return t
        h = recompute(segment, h, use_reentrant=False)
    return h


def models():
    """The models' classes, made once paddle is imported."""
    nn, F = paddle.nn, paddle.nn.functional

    class Mlp(nn.Layer):
        def __init__(self, layers, width, inp, classes, ckpt=False):
            super().__init__()
            dims = [inp] + [width] * layers
            self.blocks = nn.LayerList([nn.Linear(dims[i], width) for i in range(layers)])
            self.head = nn.Linear(width, classes)
            self.ckpt = ckpt

        def forward(self, x):
            blocks = [lambda t, i=i: F.relu(self.blocks[i](t)) for i in range(len(self.blocks))]
            return self.head(run_blocks(blocks, x, self.ckpt))

        def tree(self):
            lin = lambda m: {"w": m.weight, "b": m.bias}
            return {"blocks": [lin(m) for m in self.blocks], "head": lin(self.head)}

    class Block(nn.Layer):
        def __init__(self, hidden, heads, ffn):
            super().__init__()
            self.q, self.k, self.v, self.o = (nn.Linear(hidden, hidden) for _ in range(4))
            self.ln1, self.ln2 = nn.LayerNorm(hidden, epsilon=1e-12), nn.LayerNorm(hidden, epsilon=1e-12)
            self.f1, self.f2 = nn.Linear(hidden, ffn), nn.Linear(ffn, hidden)
            self.heads = heads

        def forward(self, x):
            b, s, h = x.shape
            d = h // self.heads
            split = lambda t: t.reshape([b, s, self.heads, d]).transpose([0, 2, 1, 3])
            q, k, v = split(self.q(x)), split(self.k(x)), split(self.v(x))
            p = F.softmax(paddle.matmul(q, k, transpose_y=True) / math.sqrt(d), axis=-1)
            c = paddle.matmul(p, v).transpose([0, 2, 1, 3]).reshape([b, s, h])
            x = self.ln1(x + self.o(c))
            return self.ln2(x + self.f2(F.gelu(self.f1(x))))

        def tree(self):
            lin = lambda m: {"w": m.weight, "b": m.bias}
            ln = lambda m: {"g": m.weight, "b": m.bias}
            return {"q": lin(self.q), "k": lin(self.k), "v": lin(self.v), "o": lin(self.o), "ln1": ln(self.ln1),
                    "f1": lin(self.f1), "f2": lin(self.f2), "ln2": ln(self.ln2)}

    class Bert(nn.Layer):
        def __init__(self, layers, hidden, heads, ffn, seq, vocab, classes, ckpt=False):
            super().__init__()
            self.words, self.pos = nn.Embedding(vocab, hidden), nn.Embedding(seq, hidden)
            self.ln = nn.LayerNorm(hidden, epsilon=1e-12)
            self.layers = nn.LayerList([Block(hidden, heads, ffn) for _ in range(layers)])
            self.pool, self.cls = nn.Linear(hidden, hidden), nn.Linear(hidden, classes)
            self.ckpt = ckpt

        def forward(self, tokens):
            x = self.ln(self.words(tokens) + self.pos.weight)
            x = run_blocks(list(self.layers), x, self.ckpt)
            return self.cls(paddle.tanh(self.pool(x[:, 0])))

        def tree(self):
            lin = lambda m: {"w": m.weight, "b": m.bias}
            return {"words": self.words.weight, "pos": self.pos.weight, "ln": {"g": self.ln.weight, "b": self.ln.bias},
                    "layers": [blk.tree() for blk in self.layers], "pool": lin(self.pool), "cls": lin(self.cls)}

    class BasicBlock(nn.Layer):
        def __init__(self, planes_in, planes, stride):
            super().__init__()
            conv = lambda i, o, k, s: nn.Conv2D(i, o, k, stride=s, padding=(k - 1) // 2, bias_attr=False)
            self.conv1, self.bn1 = conv(planes_in, planes, 3, stride), nn.BatchNorm2D(planes, epsilon=pc.BN_EPS)
            self.conv2, self.bn2 = conv(planes, planes, 3, 1), nn.BatchNorm2D(planes, epsilon=pc.BN_EPS)
            self.down = None
            if stride != 1 or planes_in != planes:
                self.down, self.down_bn = conv(planes_in, planes, 1, stride), nn.BatchNorm2D(planes, epsilon=pc.BN_EPS)

        def forward(self, x):
            o = self.bn2(self.conv2(F.relu(self.bn1(self.conv1(x)))))
            return F.relu(o + (x if self.down is None else self.down_bn(self.down(x))))

        def tree(self):
            bn = lambda m: {"g": m.weight, "b": m.bias}
            t = {"conv1": self.conv1.weight, "bn1": bn(self.bn1), "conv2": self.conv2.weight, "bn2": bn(self.bn2)}
            if self.down is not None:
                t.update(down=self.down.weight, down_bn=bn(self.down_bn))
            return t

    class ResNet(nn.Layer):
        def __init__(self, kw, ckpt=False):
            super().__init__()
            width = kw.get("width", 16)
            self.conv1 = nn.Conv2D(kw["in"][0], width, 3, padding=1, bias_attr=False)
            self.bn1 = nn.BatchNorm2D(width, epsilon=pc.BN_EPS)
            self.blocks = nn.LayerList([BasicBlock(*b) for b in pc.resnet_blocks(kw)])
            self.fc = nn.Linear(4 * width, kw["classes"])
            self.ckpt = ckpt

        def forward(self, x):
            h = run_blocks(list(self.blocks), F.relu(self.bn1(self.conv1(x))), self.ckpt)
            return self.fc(h.mean([2, 3]))

        def tree(self):
            return {"conv1": self.conv1.weight, "bn1": {"g": self.bn1.weight, "b": self.bn1.bias},
                    "blocks": [blk.tree() for blk in self.blocks], "fc": {"w": self.fc.weight, "b": self.fc.bias}}
    return Mlp, Bert, ResNet


def make(name, kw, params, ckpt):
    """The model with |params| (a tree of numpy arrays, pc.build()'s) as its parameters: the
    same initialisation as the other peers, and a layout ([in, out] linears) paddle shares."""
    Mlp, Bert, ResNet = models()
    if name == "mlp":
        model = Mlp(kw["layers"], kw["width"], kw["in"], kw["classes"], ckpt)
    elif name == "resnet":
        model = ResNet(kw, ckpt)
    else:
        model = Bert(kw["layers"], kw["hidden"], kw["heads"], kw["ffn"], kw["seq"], kw["vocab"], kw["classes"], ckpt)
    for p, value in zip(pc.leaves(model.tree()), pc.leaves(params)):
        p.set_value(value)
    return model


def trainer(name, kw, params, x, labels, ckpt):
    model = make(name, kw, params, ckpt)
    opt = paddle.optimizer.Adam(learning_rate=pc.LR, parameters=model.parameters())
    x, labels = paddle.to_tensor(x), paddle.to_tensor(labels)

    def forward_backward():
        opt.clear_grad(set_to_zero=False)
        loss = paddle.nn.functional.cross_entropy(model(x), labels)
        loss.backward()
        return loss
    return model, opt, forward_backward


def measure(spec, ckpt, steps, warmup):
    model, batch, name, kw = pc.parse(spec)
    _, opt, forward_backward = trainer(name, kw, pc.torch_init(name, kw), *pc.batch_data(name, kw, batch, seed=1), ckpt)

    def step():
        forward_backward()
        opt.step()
    return pc.timed(step, steps, warmup)


def check_peer(name, kw, params, x, labels, mode):
    model, opt, forward_backward = trainer(name, kw, params, x, labels, mode == "checkpoint sqrt")
    grads_of = lambda: pc.rebuild(params, [p.grad.numpy() for p in pc.leaves(model.tree())])
    loss = float(forward_backward())
    grads = grads_of()
    opt.step()
    forward_backward()
    grads2 = grads_of()
    opt.step()
    return loss, grads, grads2, pc.rebuild(params, [p.numpy() for p in pc.leaves(model.tree())])


def check_adam(params, grads):
    ps = [paddle.create_parameter(p.shape, "float32", default_initializer=paddle.nn.initializer.Assign(p))
          for p in params]
    opt = paddle.optimizer.Adam(learning_rate=pc.LR, parameters=ps)
    for g in grads:
        opt.clear_grad(set_to_zero=False)
        sum((p * paddle.to_tensor(a)).sum() for p, a in zip(ps, g)).backward()
        opt.step()
    return [p.numpy() for p in ps]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--modes", default="", help="comma-separated subset of: " + ", ".join(MODES))
    ap.add_argument("--check", action="store_true", help="compare loss, gradient and Adam with a float64 reference "
                    "on tiny models (" + " ".join(pc.CHECK_SPECS) + ") instead of timing")
    ap.add_argument("--mkl-as-shipped", action="store_true", help="on an AMD CPU, leave MKL on its generic kernels "
                    "(by default the script sets MKL_DEBUG_CPU_TYPE=5, MKL's AVX2 kernels)")
    ap.add_argument("specs", nargs="*")
    args = ap.parse_args()
    threads = args.threads or len(os.sched_getaffinity(0))
    os.environ["OMP_NUM_THREADS"] = os.environ["MKL_NUM_THREADS"] = str(threads)
    with open("/proc/cpuinfo") as f:
        amd = "AuthenticAMD" in f.read()
    if amd and not args.mkl_as_shipped:
        os.environ.setdefault("MKL_DEBUG_CPU_TYPE", "5")
    mkl = f"MKL_DEBUG_CPU_TYPE={os.environ['MKL_DEBUG_CPU_TYPE']}" if "MKL_DEBUG_CPU_TYPE" in os.environ else (
        "MKL as shipped" + (" (generic kernels on this AMD CPU)" if amd else ""))
    global paddle, recompute
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the import's "No ccache found" (paddle's C++ extension builder)
        try:
            import paddle
        except ImportError:
            sys.exit(f"# paddle is not installed for {sys.executable}: its python is the last line of "
                     "bash bench/peers_venv.sh")
        from paddle.distributed.fleet.utils import recompute
        from paddle.distributed.fleet.utils.log_util import logger
    # recompute() warns that a segment whose inputs need no gradient (the mlp's first: the batch)
    # need not be recomputed; its hook form (use_reentrant=False) recomputes it all the same.
    logger.setLevel(logging.ERROR)
    # BatchNorm2D says on every training call that it tracks running statistics (as torch does).
    warnings.filterwarnings("ignore", message="When training, we now always track")
    paddle.set_device("cpu")
    paddle.base.core.set_num_threads(threads)
    wanted = [m.strip() for m in args.modes.split(",") if m.strip()]
    modes = [m for m in MODES if not wanted or m in wanted]
    if args.check:
        print(f"# PaddlePaddle {paddle.__version__} CPU, {threads} threads, {mkl}; --check against a float64 "
              "numpy reference")
        sys.exit(pc.check(check_peer, check_adam, {name: modes for name in pc.MODELS}))
    if not args.specs:
        ap.error("give MODEL@BATCH specs, or --check")
    print(f"# PaddlePaddle {paddle.__version__} CPU (dygraph), {threads} threads (OMP/MKL), {mkl}; median of "
          f"{args.steps} steps after {args.warmup} warm-up")
    print("| model | batch | mode | median ms | min ms |")
    print("|---|---|---|---|---|")
    for spec in args.specs:
        model, batch, _, _ = pc.parse(spec)
        for mode in modes:
            med, low = measure(spec, mode == "checkpoint sqrt", args.steps, args.warmup)
            print(f"| {model} | {batch} | {mode} | {med:.1f} | {low:.1f} |", flush=True)


if __name__ == "__main__":
    main()
