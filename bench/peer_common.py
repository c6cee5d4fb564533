"""What the JAX and PaddlePaddle peers of bench/torch_step.py share: the spec grammar, Chen's sqrt
segmentation, PyTorch's default initialisation, the timing, and the --check: a float64 numpy
reference of the models' loss on deterministic parameters against which each peer's loss,
gradient and Adam steps are compared.

The parameters are one nested tree of dicts and lists, the same for every peer (linear weights
laid out [in, out], as x @ w + b):
    mlp:         {"blocks": [{"w", "b"}, ...], "head": {"w", "b"}}
    transformer: {"words", "pos", "ln": {"g", "b"}, "layers": [{"q", "k", "v", "o", "ln1", "f1",
                  "f2", "ln2"}, ...], "pool", "cls"}
    resnet:      {"conv1", "bn1": {"g", "b"}, "blocks": [{"conv1", "bn1", "conv2", "bn2"[, "down",
                  "down_bn"]}, ...], "fc": {"w", "b"}}
with convolution weights laid out [out, in, kh, kw] (torch's OIHW) and images NCHW.
"""
import math
import statistics
import sys
import time

import numpy as np

# The spec grammar of bench/torch_step.py, and torch.optim.Adam(lr=1e-4)'s defaults.
LR, BETA1, BETA2, ADAM_EPS = 1e-4, 0.9, 0.999, 1e-8
LN_EPS = 1e-12
# torch.nn.BatchNorm2d's default eps: the ResNet normalises with the batch's statistics.
BN_EPS = 1e-5
CHECK_SPECS = ["mlp:layers=3,width=16,in=8,classes=3@4",
               "transformer:layers=2,hidden=32,heads=4,ffn=64,seq=8,vocab=50,classes=2@4",
               "resnet:depth=8,width=4,in=3x8x8,classes=3@4"]
MODELS = ("mlp", "transformer", "resnet")


def parse(spec):
    """MODEL@BATCH as (model, batch, name, kw), as bench/torch_step.py reads it."""
    model, batch = spec.rsplit("@", 1)
    name, _, rest = model.partition(":")
    value = lambda v: tuple(int(d) for d in v.split("x")) if "x" in v else float(v) if "." in v else int(v)
    kw = {k: value(v) for k, v in (kv.split("=") for kv in rest.split(","))}
    if name not in MODELS:
        sys.exit(f"unknown model {name!r} in {spec!r}: " + ", ".join(MODELS))
    if name == "resnet" and (kw.get("depth", 0) - 2) % 6 != 0:
        sys.exit(f"{spec}: resnet's depth is 6n + 2")
    if kw.get("dropout", 0.0):
        sys.exit(f"{spec}: the peers run without dropout (dropout={kw['dropout']})")
    return model, int(batch), name, kw


def segments(count):
    """Chen's sqrt(n) segmentation of |count| blocks, bench/torch_step.py's: round(sqrt(count))
    consecutive segments whose sizes differ by at most one, as (start, end) index pairs."""
    n = max(1, round(math.sqrt(count)))
    bounds = [round(i * count / n) for i in range(n + 1)]
    return [(a, b) for a, b in zip(bounds, bounds[1:]) if b > a]


def resnet_blocks(kw):
    """The ResNet's blocks in order as (in planes, planes, stride): docs/templates.md's."""
    n, width = (kw["depth"] - 2) // 6, kw.get("width", 16)
    blocks, planes_in = [], width
    for stage in range(3):
        for i in range(n):
            planes = width << stage
            blocks.append((planes_in, planes, 2 if stage > 0 and i == 0 else 1))
            planes_in = planes
    return blocks


def build(name, kw, fill):
    """The parameter tree of a model, each leaf from |fill|(kind, shape, fan_in), called in the
    tree's order (the order of leaves() below)."""
    lin = lambda i, o: {"w": fill("weight", (i, o), i), "b": fill("bias", (o,), i)}
    ln = lambda h: {"g": fill("ln_weight", (h,), h), "b": fill("ln_bias", (h,), h)}
    conv = lambda o, i, k: fill("conv", (o, i, k, k), i * k * k)
    if name == "resnet":
        def block(planes_in, planes, stride):
            b = {"conv1": conv(planes, planes_in, 3), "bn1": ln(planes), "conv2": conv(planes, planes, 3),
                 "bn2": ln(planes)}
            if stride != 1 or planes_in != planes:
                b.update(down=conv(planes, planes_in, 1), down_bn=ln(planes))
            return b
        width = kw.get("width", 16)
        return {"conv1": conv(width, kw["in"][0], 3), "bn1": ln(width),
                "blocks": [block(*b) for b in resnet_blocks(kw)], "fc": lin(4 * width, kw["classes"])}
    if name == "mlp":
        dims = [kw["in"]] + [kw["width"]] * kw["layers"]
        return {"blocks": [lin(dims[i], kw["width"]) for i in range(kw["layers"])],
                "head": lin(kw["width"], kw["classes"])}
    h, f = kw["hidden"], kw["ffn"]
    return {"words": fill("embedding", (kw["vocab"], h), h), "pos": fill("embedding", (kw["seq"], h), h),
            "ln": ln(h),
            "layers": [{"q": lin(h, h), "k": lin(h, h), "v": lin(h, h), "o": lin(h, h), "ln1": ln(h),
                        "f1": lin(h, f), "f2": lin(f, h), "ln2": ln(h)} for _ in range(kw["layers"])],
            "pool": lin(h, h), "cls": lin(h, kw["classes"])}


def torch_init(name, kw, seed=0):
    """PyTorch's default initialisation in float32: nn.Linear's weight and bias and nn.Conv2d's
    weight uniform in +-1/sqrt(fan_in), nn.Embedding normal(0, 1), nn.LayerNorm and
    nn.BatchNorm2d ones and zeros."""
    rng = np.random.default_rng(seed)

    def fill(kind, shape, fan_in):
        if kind in ("weight", "bias", "conv"):
            return rng.uniform(-1, 1, shape).astype(np.float32) / np.float32(math.sqrt(fan_in))
        if kind == "embedding":
            return rng.standard_normal(shape).astype(np.float32)
        return (np.ones if kind == "ln_weight" else np.zeros)(shape, np.float32)
    return build(name, kw, fill)


def check_params(name, kw):
    """Deterministic parameters: leaf t (in tree order) is scale * sin(0.37 k + 1.1 t) over its
    flat index k, with scale 2/sqrt(fan_in) for linears and 1 for embeddings; layer norms are
    1 + 0.1 sin and 0.1 sin. Activations stay of order one, so the logits matter to the loss."""
    count = [0]

    def fill(kind, shape, fan_in):
        t, count[0] = count[0], count[0] + 1
        s = np.sin(0.37 * np.arange(math.prod(shape)) + 1.1 * t).reshape(shape)
        scale = {"weight": 2 / math.sqrt(fan_in), "bias": 2 / math.sqrt(fan_in), "conv": 2 / math.sqrt(fan_in),
                 "embedding": 1.0}
        if kind == "ln_weight":
            s = 1 + 0.1 * s
        elif kind == "ln_bias":
            s = 0.1 * s
        else:
            s = scale[kind] * s
        return s.astype(np.float32)
    return build(name, kw, fill)


def batch_data(name, kw, batch, seed=None):
    """Inputs and labels: random as bench/torch_step.py draws them (uniform in [-1, 1) for the
    mlp's vectors and the ResNet's NCHW images, uniform tokens), or deterministic when |seed| is
    None."""
    classes = kw["classes"]
    shape = (batch, kw["in"]) if name == "mlp" else (batch,) + kw["in"] if name == "resnet" else (batch, kw["seq"])
    if seed is None:
        labels = np.arange(batch) % classes
        if name == "transformer":
            x = (np.arange(batch * kw["seq"]) * 7 + 3).reshape(shape) % kw["vocab"]
        else:
            x = np.sin(0.5 * np.arange(math.prod(shape))).reshape(shape).astype(np.float32)
    else:
        rng = np.random.default_rng(seed)
        labels = rng.integers(0, classes, batch)
        x = (rng.integers(0, kw["vocab"], shape) if name == "transformer"
             else rng.uniform(-1, 1, shape).astype(np.float32))
    return (x.astype(np.int64) if name == "transformer" else x), labels.astype(np.int64)


def leaves(tree):
    """The leaves of a parameter tree in build()'s order."""
    if isinstance(tree, dict):
        return [leaf for v in tree.values() for leaf in leaves(v)]
    if isinstance(tree, list):
        return [leaf for v in tree for leaf in leaves(v)]
    return [tree]


def reorder(tree, like):
    """|tree| (the same keys and lists as |like|, its dicts in any order; JAX sorts them) with
    |like|'s order."""
    if isinstance(like, dict):
        return {k: reorder(tree[k], v) for k, v in like.items()}
    if isinstance(like, list):
        return [reorder(t, v) for t, v in zip(tree, like)]
    return tree


def rebuild(tree, values):
    """|tree|'s structure with |values| (in leaves() order) as its leaves."""
    it = iter(values)

    def walk(t):
        if isinstance(t, dict):
            return {k: walk(v) for k, v in t.items()}
        if isinstance(t, list):
            return [walk(v) for v in t]
        return next(it)
    return walk(tree)


# ---- The float64 reference of the forward pass and loss (bench/torch_step.py's models).

_erf = np.vectorize(math.erf)


def _linear(p, x):
    return x @ p["w"] + p["b"]


def _layer_norm(p, x):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + LN_EPS) * p["g"] + p["b"]


def _softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def _block(p, x, heads):
    b, s, h = x.shape
    d = h // heads
    split = lambda t: t.reshape(b, s, heads, d).transpose(0, 2, 1, 3)
    q, k, v = (split(_linear(p[n], x)) for n in "qkv")
    c = (_softmax(q @ k.transpose(0, 1, 3, 2) / math.sqrt(d)) @ v).transpose(0, 2, 1, 3).reshape(b, s, h)
    x = _layer_norm(p["ln1"], x + _linear(p["o"], c))
    u = _linear(p["f1"], x)
    return _layer_norm(p["ln2"], x + _linear(p["f2"], 0.5 * u * (1 + _erf(u / math.sqrt(2)))))


def _conv(w, x, stride):
    """torch's conv2d of NCHW |x| by OIHW |w| (no bias), padding (k - 1) / 2."""
    k = w.shape[-1]
    pad = (k - 1) // 2
    x = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    windows = np.lib.stride_tricks.sliding_window_view(x, (k, k), axis=(2, 3))[:, :, ::stride, ::stride]
    return np.einsum("nchwij,ocij->nohw", windows, w)


def _batch_norm(p, x):
    """Training-mode batch normalisation over N, H, W (biased variance)."""
    mu = x.mean((0, 2, 3), keepdims=True)
    var = ((x - mu) ** 2).mean((0, 2, 3), keepdims=True)
    return (x - mu) / np.sqrt(var + BN_EPS) * p["g"][:, None, None] + p["b"][:, None, None]


def _resnet_block(p, h, stride):
    o = np.maximum(_batch_norm(p["bn1"], _conv(p["conv1"], h, stride)), 0)
    o = _batch_norm(p["bn2"], _conv(p["conv2"], o, 1))
    shortcut = _batch_norm(p["down_bn"], _conv(p["down"], h, stride)) if "down" in p else h
    return np.maximum(o + shortcut, 0)


def reference_loss(name, kw, params, x, labels):
    """Mean cross-entropy of the model on (|x|, |labels|) in float64."""
    p = rebuild(params, [np.asarray(a, np.float64) for a in leaves(params)])
    if name == "resnet":
        h = np.maximum(_batch_norm(p["bn1"], _conv(p["conv1"], np.asarray(x, np.float64), 1)), 0)
        for blk, (_, _, stride) in zip(p["blocks"], resnet_blocks(kw)):
            h = _resnet_block(blk, h, stride)
        logits = _linear(p["fc"], h.mean((2, 3)))
    elif name == "mlp":
        h = np.asarray(x, np.float64)
        for blk in p["blocks"]:
            h = np.maximum(_linear(blk, h), 0)
        logits = _linear(p["head"], h)
    else:
        h = _layer_norm(p["ln"], p["words"][x] + p["pos"])
        for layer in p["layers"]:
            h = _block(layer, h, kw["heads"])
        logits = _linear(p["cls"], np.tanh(_linear(p["pool"], h[:, 0])))
    z = logits - logits.max(-1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(-1, keepdims=True))
    return float(-logp[np.arange(len(labels)), labels].mean())


def reference_adam(params, grads):
    """torch.optim.Adam's update (lr 1e-4, betas 0.9/0.999, eps 1e-8) after len(|grads|) steps,
    in float64, from the leaves |params| and the gradient leaves of each step."""
    p = [np.asarray(a, np.float64) for a in params]
    m = [np.zeros_like(a) for a in p]
    v = [np.zeros_like(a) for a in p]
    for t, g in enumerate(grads, 1):
        for i, gi in enumerate(g):
            gi = np.asarray(gi, np.float64)
            m[i] = BETA1 * m[i] + (1 - BETA1) * gi
            v[i] = BETA2 * v[i] + (1 - BETA2) * gi * gi
            p[i] = p[i] - LR / (1 - BETA1 ** t) * m[i] / (np.sqrt(v[i]) / math.sqrt(1 - BETA2 ** t) + ADAM_EPS)
    return p


def _dot(a, b):
    return sum(float((x * y).sum()) for x, y in zip(a, b))


def _norm(a):
    return math.sqrt(_dot(a, a))


def _max_err(got, want):
    return max(float(np.abs(np.asarray(g, np.float64) - w).max()) for g, w in zip(got, want))


def adam_case():
    """A synthetic optimizer case for check(): parameters of 1e-3 (so that float32 resolves a
    1e-4 step to 1e-7 of it) and three steps of gradients that change sign and scale, some
    entries near Adam's eps, so that the betas, the bias corrections and eps all show."""
    rng = np.random.default_rng(2)
    params = [(1e-3 * rng.standard_normal(shape)).astype(np.float32) for shape in ((5, 7), (11,))]
    scales = [np.float32(1e-8), np.float32(1e-3), np.float32(1.0)]
    grads = [[(rng.standard_normal(p.shape) * rng.choice(scales, p.shape)).astype(np.float32) for p in params]
             for _ in range(3)]
    return params, grads


def check(peer, peer_adam, modes):
    """The --check of a peer. On each check model, |peer|(name, kw, params, x, labels, mode) ->
    (loss, grads, grads2, params2) gives the loss at the deterministic parameters, its gradient,
    the gradient after one Adam step and the parameters after two (trees as build() makes them,
    numpy leaves); they are compared with the float64 reference: the loss (relative error), the
    gradient's directional derivatives along itself and along a fixed random direction (central
    differences of the reference loss; error relative to the gradient's norm), and the
    parameters after two steps against reference_adam() on the peer's gradients (error in units
    of the learning rate; float32 parameters of order one resolve about 1e-3 of it, and with
    lr 1e-4 the two gradients are nearly equal, so this shows a missing parameter or a wrong lr,
    not the betas). The optimizer itself is checked on adam_case(): |peer_adam|(params, grads)
    -> the parameters after len(grads) steps. Returns the exit status: 0 when all is within
    tolerance."""
    tol_loss, tol_grad, tol_adam, tol_opt = 1e-5, 1e-5, 1e-2, 1e-4
    print("| model | mode | loss | float64 loss | loss rel err | grad err | adam err / lr | ok |")
    print("|---|---|---|---|---|---|---|---|")
    status = 0
    for spec in CHECK_SPECS:
        model, batch, name, kw = parse(spec)
        params = check_params(name, kw)
        x, labels = batch_data(name, kw, batch)
        ref = reference_loss(name, kw, params, x, labels)
        p0 = [a.astype(np.float64) for a in leaves(params)]
        rng = np.random.default_rng(1)
        random_direction = [rng.standard_normal(a.shape) for a in p0]
        for mode in modes.get(name, []):
            loss, grads, grads2, params2 = peer(name, kw, params, x, labels, mode)
            g = [np.asarray(a, np.float64) for a in leaves(grads)]
            grad_err = 0.0
            for d in (g, random_direction):
                d = [a / _norm(d) for a in d]
                # Small: the ResNet's batch norms over 4 images curve the loss enough that h = 1e-4
                # is off by 1e-4 of the gradient; at 1e-6 float64's rounding stays near 1e-10.
                h = 1e-6
                moved = lambda s: rebuild(params, [a + s * h * u for a, u in zip(p0, d)])
                lp, lm = (reference_loss(name, kw, moved(s), x, labels) for s in (1, -1))
                fd = (lp - lm) / (2 * h)
                grad_err = max(grad_err, abs(fd - _dot(g, d)) / _norm(g))
            adam_err = _max_err(leaves(params2), reference_adam(p0, [g, leaves(grads2)])) / LR
            loss_err = abs(loss - ref) / abs(ref)
            ok = loss_err <= tol_loss and grad_err <= tol_grad and adam_err <= tol_adam
            status |= not ok
            print(f"| {model}@{batch} | {mode} | {loss:.7f} | {ref:.7f} | {loss_err:.1e} | {grad_err:.1e} | "
                  f"{adam_err:.1e} | {'yes' if ok else 'NO'} |", flush=True)
    params, grads = adam_case()
    want = reference_adam(params, grads)
    opt_err = _max_err(peer_adam(params, grads), want) / LR
    status |= not opt_err <= tol_opt
    print(f"# optimizer alone, 3 steps of changing gradients: error {opt_err:.1e} of lr "
          f"({'yes' if opt_err <= tol_opt else 'NO'})")
    print(f"# tolerances: loss {tol_loss:g} relative; gradient {tol_grad:g} of its norm; parameters after two "
          f"Adam steps {tol_adam:g} of lr, the optimizer alone {tol_opt:g} of lr")
    return status


def timed(step, steps, warmup):
    """Median and min in ms of |steps| calls of |step| (which must return only when its work is
    done) after |warmup| calls."""
    times = []
    for s in range(warmup + steps):
        start = time.perf_counter()
        step()
        if s >= warmup:
            times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times), min(times)
