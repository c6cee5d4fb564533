"""JAX/XLA peer of bench/torch_step.py on the CPU: the same models (Mlp, Bert, ResNet), batch, Adam
(lr 1e-4, written out as torch.optim.Adam computes it) and table, the step one jitted function
(forward, gradient, Adam update) with the parameters and optimizer state donated.

Modes: `none` (plain jit), `checkpoint sqrt` (jax.checkpoint around each of Chen's sqrt segments,
bench/torch_step.py's segmentation), and for the transformer `scan` (the blocks' parameters
stacked and the blocks run by lax.scan) and `scan remat` (the same with jax.checkpoint around
the block: the layout XLA users take for recomputation). The ResNet computes in NHWC, XLA's CPU
layout for convolutions (the images are transposed before the timing), normalises with the
batch's statistics as torch's training mode does, and keeps no running statistics (torch's
and remat's update two vectors per batch norm a step: a negligible part of it).

XLA's CPU pipeline and jax.checkpoint: jax.checkpoint keeps XLA from merging the recomputed
forward with the original by optimization barriers, and XLA's CPU pipeline removes those
barriers (its cse_barrier_expander pass) before its CSE, which then merges the two: as shipped,
`checkpoint sqrt` over the unrolled blocks recomputes nothing on the CPU (the 32-layer mlp's step
keeps 98 products of 130, and 70 MiB of temporaries as `none` does). `scan remat` is not
affected: its recomputation lies in the backward loop's body. So the script disables that pass
(XLA_FLAGS --xla_disable_hlo_passes=cse_barrier_expander, added to any XLA_FLAGS given) and the
barriers stay, as on GPUs and TPUs; --xla-as-shipped leaves the pipeline as it is. The modes
without jax.checkpoint compile to the same program either way.

`planned MiB` is XLA's plan of the compiled step (Compiled.memory_analysis()): argument +
output - alias + temp bytes, i.e. parameters, Adam moments and batch (donated outputs alias
their arguments and are counted once), plus the temporary buffer XLA assigns to the step's
activations and gradients; `temp MiB` is that temporary part alone, the figure to set beside
remat's arena. Blank where the installed jaxlib gives no analysis.

Threads: XLA's CPU runtime sizes its thread pool from the CPUs the process may run on, and in
jax 0.10 ignores XLA_FLAGS --xla_cpu_multi_thread_eigen / intra_op_parallelism_threads, so
--threads N restricts the process to its first N CPUs (sched_setaffinity) before jax is imported;
without it XLA uses every CPU the process may run on.

    PY=$(bash bench/peers_venv.sh | tail -1)
    $PY bench/jax_step.py [--threads N] [--steps N] [--warmup N] [--modes M,...] MODEL@BATCH ...
    $PY bench/jax_step.py --check
"""
import argparse
import math
import os
import sys

# numpy's own OpenBLAS serves only the initialisation and the --check's float64 reference: its
# idle threads must not take a core from XLA's.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
import numpy as np  # noqa: E402

import peer_common as pc  # noqa: E402

MODES = {"mlp": ["none", "checkpoint sqrt"], "transformer": ["none", "checkpoint sqrt", "scan", "scan remat"],
         "resnet": ["none", "checkpoint sqrt"]}


def linear(p, x):
    return x @ p["w"] + p["b"]


def layer_norm(p, x):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) * jax.lax.rsqrt(var + pc.LN_EPS) * p["g"] + p["b"]


def mlp_block(p, h):
    return jax.nn.relu(linear(p, h))


def bert_block(p, x, heads):
    b, s, h = x.shape
    d = h // heads
    split = lambda t: t.reshape(b, s, heads, d).transpose(0, 2, 1, 3)
    q, k, v = (split(linear(p[n], x)) for n in "qkv")
    a = jax.nn.softmax(q @ k.swapaxes(-1, -2) / math.sqrt(d), axis=-1)
    c = (a @ v).transpose(0, 2, 1, 3).reshape(b, s, h)
    x = layer_norm(p["ln1"], x + linear(p["o"], c))
    return layer_norm(p["ln2"], x + linear(p["f2"], jax.nn.gelu(linear(p["f1"], x), approximate=False)))


def conv(w, x, stride):
    """torch's conv2d (no bias, padding (k - 1) / 2) of NHWC |x| by OIHW |w|."""
    pad = (w.shape[-1] - 1) // 2
    return jax.lax.conv_general_dilated(x, w, (stride, stride), [(pad, pad), (pad, pad)],
                                        dimension_numbers=("NHWC", "OIHW", "NHWC"))


def batch_norm(p, x):
    mu = x.mean((0, 1, 2))
    var = ((x - mu) ** 2).mean((0, 1, 2))
    return (x - mu) * jax.lax.rsqrt(var + pc.BN_EPS) * p["g"] + p["b"]


def resnet_block(p, h, stride):
    o = jax.nn.relu(batch_norm(p["bn1"], conv(p["conv1"], h, stride)))
    o = batch_norm(p["bn2"], conv(p["conv2"], o, 1))
    shortcut = batch_norm(p["down_bn"], conv(p["down"], h, stride)) if "down" in p else h
    return jax.nn.relu(o + shortcut)


def run_blocks(blocks, layers, h, mode):
    """Runs the blocks over |h|: |blocks| their functions (block i is blocks[i](params, h)),
    |layers| a list of per-block parameters, or for the scan modes one tree of them stacked on a
    leading axis (every block then runs blocks[0])."""
    if mode == "none":
        for f, p in zip(blocks, layers):
            h = f(p, h)
        return h
    if mode == "checkpoint sqrt":
        def segment(fs, ps, t):
            for f, p in zip(fs, ps):
                t = f(p, t)
            return t
        for a, b in pc.segments(len(layers)):
            h = jax.checkpoint(lambda ps, t, fs=blocks[a:b]: segment(fs, ps, t))(layers[a:b], h)
        return h
    body = jax.checkpoint(blocks[0]) if mode == "scan remat" else blocks[0]
    return jax.lax.scan(lambda t, p: (body(p, t), None), h, layers)[0]


def loss_fn(name, kw, mode):
    def loss(params, x, labels):
        if name == "mlp":
            blocks = [mlp_block] * len(params["blocks"])
            logits = linear(params["head"], run_blocks(blocks, params["blocks"], x, mode))
        elif name == "resnet":
            blocks = [lambda p, t, s=stride: resnet_block(p, t, s) for _, _, stride in pc.resnet_blocks(kw)]
            h = jax.nn.relu(batch_norm(params["bn1"], conv(params["conv1"], x, 1)))
            logits = linear(params["fc"], run_blocks(blocks, params["blocks"], h, mode).mean((1, 2)))
        else:
            h = layer_norm(params["ln"], params["words"][x] + params["pos"])
            block = lambda p, t: bert_block(p, t, kw["heads"])
            h = run_blocks([block] * len(params["layers"]), params["layers"], h, mode)
            logits = linear(params["cls"], jnp.tanh(linear(params["pool"], h[:, 0])))
        logp = jax.nn.log_softmax(logits, axis=-1)
        return -jnp.take_along_axis(logp, labels[:, None], axis=-1).mean()
    return loss


def adam(params, grads, state):
    """torch.optim.Adam's update (its single-tensor form) with lr 1e-4, betas 0.9/0.999, eps 1e-8."""
    m, v, t = state
    t = t + 1
    m = jax.tree.map(lambda m, g: pc.BETA1 * m + (1 - pc.BETA1) * g, m, grads)
    v = jax.tree.map(lambda v, g: pc.BETA2 * v + (1 - pc.BETA2) * g * g, v, grads)
    step_size = pc.LR / (1 - pc.BETA1 ** t)
    bc2_sqrt = jnp.sqrt(1 - pc.BETA2 ** t)
    params = jax.tree.map(lambda p, m, v: p - step_size * m / (jnp.sqrt(v) / bc2_sqrt + pc.ADAM_EPS), params, m, v)
    return params, (m, v, t)


def make_step(name, kw, mode, with_grads=False):
    grad = jax.value_and_grad(loss_fn(name, kw, mode))

    def step(params, state, x, labels):
        loss, grads = grad(params, x, labels)
        params, state = adam(params, grads, state)
        return (params, state, loss, grads) if with_grads else (params, state, loss)
    return jax.jit(step, donate_argnums=(0, 1))


def to_device(params, mode):
    """The parameter tree on the device; the scan modes stack the transformer's blocks."""
    params = jax.tree.map(jnp.asarray, params)
    if mode.startswith("scan"):
        params = dict(params, layers=jax.tree.map(lambda *a: jnp.stack(a), *params["layers"]))
    return params


def from_device(tree, like, mode):
    """A device tree back as numpy in |like|'s structure (build()'s)."""
    tree = jax.tree.map(np.asarray, tree)
    if mode.startswith("scan"):
        tree = dict(tree, layers=[jax.tree.map(lambda a: a[i], tree["layers"]) for i in range(len(like["layers"]))])
    return pc.reorder(tree, like)


def to_nhwc(name, x):
    """The ResNet's NCHW images as NHWC; other inputs as they are."""
    return x.transpose(0, 2, 3, 1) if name == "resnet" else x


def init_state(params):
    zeros = lambda: jax.tree.map(jnp.zeros_like, params)
    return zeros(), zeros(), jnp.zeros((), jnp.float32)


def measure(spec, mode, steps, warmup):
    model, batch, name, kw = pc.parse(spec)
    params = to_device(pc.torch_init(name, kw), mode)
    state = init_state(params)
    x, labels = (jnp.asarray(a) for a in pc.batch_data(name, kw, batch, seed=1))
    x = to_nhwc(name, x)
    compiled = make_step(name, kw, mode).lower(params, state, x, labels).compile()
    try:
        mem = compiled.memory_analysis()
        planned = (mem.argument_size_in_bytes + mem.output_size_in_bytes - mem.alias_size_in_bytes
                   + mem.temp_size_in_bytes) / 2**20
        temp = mem.temp_size_in_bytes / 2**20
    except (AttributeError, NotImplementedError, TypeError):
        planned = temp = None
    carry = [params, state]

    def step():
        carry[0], carry[1], loss = compiled(carry[0], carry[1], x, labels)
        jax.block_until_ready((carry[0], carry[1], loss))
    return pc.timed(step, steps, warmup) + (planned, temp)


def check_peer(name, kw, params, x, labels, mode):
    step = make_step(name, kw, mode, with_grads=True)
    p = to_device(params, mode)
    state = init_state(p)
    x, labels = to_nhwc(name, jnp.asarray(x)), jnp.asarray(labels)
    p, state, loss, grads = step(p, state, x, labels)
    p, state, _, grads2 = step(p, state, x, labels)
    return (float(loss), from_device(grads, params, mode), from_device(grads2, params, mode),
            from_device(p, params, mode))


def check_adam(params, grads):
    params = [jnp.asarray(p) for p in params]
    state = init_state(params)
    for g in grads:
        params, state = jax.jit(adam)(params, [jnp.asarray(a) for a in g], state)
    return [np.asarray(p) for p in params]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=0, help="restrict the process to its first N CPUs")
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--modes", default="", help="comma-separated subset of: " + ", ".join(MODES["transformer"]))
    ap.add_argument("--check", action="store_true", help="compare loss, gradient and Adam with a float64 reference "
                    "on tiny models (" + " ".join(pc.CHECK_SPECS) + ") instead of timing")
    ap.add_argument("--xla-as-shipped", action="store_true", help="leave XLA's CPU pipeline as it is: it removes "
                    "jax.checkpoint's optimization barriers, and CSE then undoes `checkpoint sqrt`")
    ap.add_argument("specs", nargs="*")
    args = ap.parse_args()
    if args.threads:
        os.sched_setaffinity(0, sorted(os.sched_getaffinity(0))[:args.threads])
    if not args.xla_as_shipped:
        flags = os.environ.get("XLA_FLAGS", "") + " --xla_disable_hlo_passes=cse_barrier_expander"
        os.environ["XLA_FLAGS"] = flags.strip()
    flags = f"XLA_FLAGS={os.environ['XLA_FLAGS']}" if os.environ.get("XLA_FLAGS") else "XLA as shipped"
    global jax, jnp
    try:
        import jax
        import jax.numpy as jnp
    except ImportError:
        sys.exit(f"# jax is not installed for {sys.executable}: its python is the last line of "
                 "bash bench/peers_venv.sh")
    threads = len(os.sched_getaffinity(0))
    wanted = [m.strip() for m in args.modes.split(",") if m.strip()]
    pick = lambda name: [m for m in MODES[name] if not wanted or m in wanted]
    if args.check:
        print(f"# JAX {jax.__version__} CPU, {threads} threads, {flags}; --check against a float64 numpy reference")
        sys.exit(pc.check(check_peer, check_adam, {n: pick(n) for n in MODES}))
    if not args.specs:
        ap.error("give MODEL@BATCH specs, or --check")
    print(f"# JAX {jax.__version__} (jaxlib {jax.lib.__version__}) CPU, {threads} threads (the CPUs the process may "
          f"run on), {flags}; median of {args.steps} steps after {args.warmup} warm-up, compile excluded")
    print("| model | batch | mode | median ms | min ms | planned MiB | temp MiB |")
    print("|---|---|---|---|---|---|---|")
    for spec in args.specs:
        model, batch, name, _ = pc.parse(spec)
        for mode in pick(name):
            med, low, planned, temp = measure(spec, mode, args.steps, args.warmup)
            mib = lambda v: "" if v is None else f"{v:.1f}"
            print(f"| {model} | {batch} | {mode} | {med:.1f} | {low:.1f} | {mib(planned)} | {mib(temp)} |", flush=True)


if __name__ == "__main__":
    main()
