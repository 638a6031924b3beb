# The PyTorch anchor of bench_train_step, under whichever PyTorch runs it (Debian's 1.13, or PyTorch 2
# from perf/anchor-env.sh's environment): the zoo models (mlp, lenet, fmnist_sepcnn) rebuilt
# layer for layer in PyTorch, and the ResNets: resnet20 (akamaster's CIFAR ResNet-20, option-A
# shortcuts, its stem taking 1 channel) on 28x28x1 with 10 classes as the small models, and
# torchvision 0.14's networks (resnet18, resnet50, mobilenet_v2, vgg16; inception_v3 at 299x299 with
# its auxiliary classifier, weighted 0.4 in the loss; no weights) on 224x224x3 with 1000 classes; timed
# on the same training step (SGD momentum 0.9, cross-entropy) and global batch, as one process with 2 threads and as DDP
# with 2 processes x 1 thread (gloo), the convolutional models both in PyTorch's default NCHW layout
# and channels_last (oneDNN's NHWC path, 1.2-1.5x faster here), so that the caller can take PyTorch's
# best configuration; --compile adds each configuration under torch.compile (PyTorch 2 only: inductor,
# which on the CPU generates C++ that g++ compiles), its compilation timed apart from the steps. --dtype bf16 runs the same step in mixed precision: forward and loss under
# torch.autocast("cpu", dtype=torch.bfloat16), backward and the SGD update outside it (PyTorch's
# recipe), parameters and gradients kept in fp32.
# Debian's torch calls the system BLAS for its Linear layers (BLAS_INFO=generic), so without OpenBLAS
# (libopenblas0-openmp, installed by scripts/install-deps.sh) they run on the reference BLAS, up to 30x
# slower; the script refuses to run in that state. PyPI's torch carries MKL.
# --device cuda (the GPU kit's speed call, scripts/gpu-kit/speed.sh) times one process on the GPU with
# cudnn.benchmark, in NCHW and channels_last, eager and (--compile) under torch.compile; --dtype fp32
# (TF32 off), tf32 (TF32 on in cuDNN and cuBLAS) or bf16 (autocast("cuda", dtype=torch.bfloat16)).
"""Run with Debian's interpreter: /usr/bin/python3 perf/pytorch_anchor.py [--json] [--models ...]

Prints one JSON line per (model, config) with --json, else a small table. Configs:
  1x2  one process, torch.set_num_threads(2), the whole global batch
  ddp2x1  torch DDP, 2 processes x 1 thread (each pinned to one core when it can be), gloo on
          127.0.0.1, per-rank batch = global / 2
  a "-cl" suffix: model and input in torch.channels_last (convolutional models only)
  a "-compile" suffix (--compile): the model under torch.compile; "compile_s" is the first step's time
          beyond a timed step's, the compilation (of rank 0, for DDP), not counted in img/s
--dtype fp32 (default) or bf16 (autocast to bfloat16 for the forward and the loss); every line
states its dtype. Inputs: random N(0, 1) images of the model's shape (INPUT: 28x28x1 for mlp, lenet,
fmnist_sepcnn and resnet20, 224x224x3 for the torchvision networks, 299x299x3 for inception_v3) and
random labels of its classes (CLASSES: 10, or 1000 for the torchvision networks). Every configuration
times at least 3 steps whatever --seconds says, after 3 untimed ones beyond the first; the models
whose step takes seconds (the torchvision networks) warm up on fewer (WARMUP) and time at least 2
(MIN_STEPS).
"""
import argparse
import contextlib
import json
import os
import socket
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F

# Parameter counts of scaletrain's zoo (and Keras' summary for fmnist_sepcnn), each on its INPUT and
# CLASSES below (resnet20: `scaletrain --model.name resnet20 --model.input 28,28,1 --model.classes 10
# --summary`; resnet18 and resnet50: torchvision's, as scaletrain's summary on 224,224,3 and 1000).
EXPECTED_PARAMS = {"mlp": 235_146, "lenet": 61_706, "lenet_dropout": 61_706, "fmnist_sepcnn": 2_887_306,
                   "resnet20": 269_434, "resnet18": 11_689_512, "resnet50": 25_557_032,
                   "mobilenet_v2": 3_504_872, "vgg16": 138_357_544, "inception_v3": 27_161_264,
                   "vit": 139_018, "vit_tiny": 5_717_416}
# The torchvision networks at ImageNet shapes (1000 classes).
TORCHVISION = ("resnet18", "resnet50", "mobilenet_v2", "vgg16", "inception_v3", "vit_tiny")
# The ViTs as torchvision's VisionTransformer: patch_size, num_layers, num_heads, hidden_dim, mlp_dim. vit is
# jobs/configs/vit_fmnist.toml's (bench_train_step passes scaletrain the same model.vit.*), on 28x28x1.
VIT = {"vit": (4, 4, 4, 64, 128), "vit_tiny": (16, 12, 3, 192, 768)}
DEFAULT_MODELS = ["mlp", "lenet", "lenet_dropout", "fmnist_sepcnn"]  # the ResNets run when --models names them
DEFAULT_BATCH = {"mlp": 256, "lenet": 256, "lenet_dropout": 256, "fmnist_sepcnn": 128, "resnet20": 128,
                 "resnet18": 16, "resnet50": 8, "mobilenet_v2": 16, "vgg16": 4, "inception_v3": 8,
                 "vit": 128, "vit_tiny": 16}
# Each model's input (C, H, W) and classes: 28x28x1 and 10 (scaletrain's synthetic data), but the
# ImageNet-shaped ResNets, which bench_train_step feeds a 224x224x3, 1000-class st-synth file.
INPUT = {**{name: (1, 28, 28) for name in EXPECTED_PARAMS}, **{name: (3, 224, 224) for name in TORCHVISION},
         "inception_v3": (3, 299, 299)}
CLASSES = {**{name: 10 for name in EXPECTED_PARAMS}, **{name: 1000 for name in TORCHVISION}}
# Untimed steps after the first, from which the timed step count is estimated (--warmup, where given,
# is for every model): fewer for the models whose step takes seconds on 2 cores.
WARMUP = {**{name: 3 for name in EXPECTED_PARAMS}, "resnet18": 2, "resnet50": 1, "mobilenet_v2": 2, "vgg16": 1,
          "inception_v3": 1, "vit_tiny": 2}
# Timed steps at least, whatever --seconds says: fewer for the models whose step takes seconds.
MIN_STEPS = {**{name: 3 for name in EXPECTED_PARAMS}, **{name: 2 for name in TORCHVISION}}


def separable(cin, cout):
    # Keras SeparableConv2D: depthwise 3x3 without bias, then pointwise 1x1 with bias.
    return [nn.Conv2d(cin, cin, 3, padding=1, groups=cin, bias=False), nn.Conv2d(cin, cout, 1)]


class ShortcutA(nn.Module):
    """akamaster's option A: subsample by 2, zero-pad the channels (planes // 4 on each side)."""

    def __init__(self, planes):
        super().__init__()
        self.planes = planes

    def forward(self, x):
        return F.pad(x[:, :, ::2, ::2], (0, 0, 0, 0, self.planes // 4, self.planes // 4), "constant", 0)


class CifarBasicBlock(nn.Module):
    def __init__(self, in_planes, planes, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(in_planes, planes, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, stride=1, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.shortcut = ShortcutA(planes) if stride != 1 or in_planes != planes else nn.Sequential()

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return F.relu(out + self.shortcut(x))


class CifarResNet(nn.Module):
    """akamaster/pytorch_resnet_cifar10's ResNet (as tests/reference/make_resnet_reference.py builds it):
    3x3 stem of 16 from `channels`, three stages of BasicBlocks (16, 32, 64), global average pool, linear."""

    def __init__(self, num_blocks, num_classes, channels=3):
        super().__init__()
        self.conv1 = nn.Conv2d(channels, 16, 3, stride=1, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(16)
        planes_in = 16
        for i, (planes, stride) in enumerate(((16, 1), (32, 2), (64, 2))):
            blocks = []
            for s in [stride] + [1] * (num_blocks - 1):
                blocks.append(CifarBasicBlock(planes_in, planes, s))
                planes_in = planes
            setattr(self, "layer%d" % (i + 1), nn.Sequential(*blocks))
        self.linear = nn.Linear(64, num_classes)
        for m in self.modules():
            if isinstance(m, (nn.Linear, nn.Conv2d)):
                nn.init.kaiming_normal_(m.weight)

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.layer3(self.layer2(self.layer1(out)))
        out = F.avg_pool2d(out, out.size()[3])
        return self.linear(out.view(out.size(0), -1))


def make_model(name, classes=None):
    """The PyTorch twin of a zoo model for its INPUT; classes: CLASSES[name] unless given."""
    classes = classes or CLASSES.get(name, 10)
    if name == "mlp":
        return nn.Sequential(nn.Flatten(), nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 128), nn.ReLU(),
                             nn.Linear(128, classes))
    if name in ("lenet", "lenet_dropout"):
        # lenet_dropout: Dropout(0.25) before each of the last two Linear layers.
        drop = [nn.Dropout(0.25)] if name == "lenet_dropout" else []
        return nn.Sequential(nn.Conv2d(1, 6, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
                             nn.Conv2d(6, 16, 5), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                             nn.Linear(400, 120), nn.ReLU(), *drop, nn.Linear(120, 84), nn.ReLU(), *drop,
                             nn.Linear(84, classes))
    if name == "fmnist_sepcnn":
        return nn.Sequential(nn.Conv2d(1, 128, 3, padding=1), nn.SELU(),
                             *separable(128, 128), nn.SELU(), nn.MaxPool2d(2),
                             *separable(128, 256), nn.SELU(), *separable(256, 256), nn.SELU(), nn.MaxPool2d(2),
                             *separable(256, 512), nn.SELU(), *separable(512, 512), nn.SELU(), nn.MaxPool2d(2),
                             nn.Flatten(), nn.Linear(4608, 512), nn.SELU(), nn.Linear(512, classes))
    if name == "resnet20":
        return CifarResNet(3, classes, channels=INPUT[name][0])
    if name in VIT:
        import torchvision

        channels, size, _ = INPUT[name]
        model = torchvision.models.VisionTransformer(size, *VIT[name], num_classes=classes)
        if channels != 3:  # scaletrain's patch embedding takes the data's channels
            hidden, patch = VIT[name][3], VIT[name][0]
            model.conv_proj = nn.Conv2d(channels, hidden, patch, stride=patch)
        return model
    if name in TORCHVISION:
        import torchvision  # here only: the GPU kit's nodes may have PyTorch without torchvision

        if name == "inception_v3":  # with its auxiliary classifier, as scaletrain's zoo builds it
            return torchvision.models.inception_v3(num_classes=classes, aux_logits=True, init_weights=False)
        return getattr(torchvision.models, name)(num_classes=classes)
    raise SystemExit(f"pytorch_anchor.py: unknown model '{name}' (known: {', '.join(EXPECTED_PARAMS)})")


def parameter_count(model):
    return sum(p.numel() for p in model.parameters())


def check_parameter_counts(models):
    for name in models:
        got = parameter_count(make_model(name))
        if got != EXPECTED_PARAMS[name]:
            raise SystemExit(f"pytorch_anchor.py: {name} has {got:,} parameters in PyTorch, "
                             f"scaletrain's zoo has {EXPECTED_PARAMS[name]:,}: the models differ")


DTYPES = ["fp32", "tf32", "bf16"]  # tf32: --device cuda only


def training_loss(out, y):
    """Cross-entropy of a training forward's output; Inception-v3's is (logits, auxiliary logits), whose
    auxiliary loss counts 0.4 (as scaletrain's)."""
    if isinstance(out, tuple):
        return F.cross_entropy(out[0], y) + 0.4 * F.cross_entropy(out[1], y)
    return F.cross_entropy(out, y)


def precision_scope(dtype, device="cpu"):
    # PyTorch 1.13's CPU autocast accepts only bfloat16 (and warns, then raises, on float32): fp32 runs
    # outside any autocast region.
    return torch.autocast(device, dtype=torch.bfloat16) if dtype == "bf16" else contextlib.nullcontext()


def time_training(model, optimizer, x, y, warmup, seconds, dtype, sync=None, device="cpu", min_steps=3):
    """(steps, elapsed, first) of training steps timed after `warmup` untimed ones, `first` the first
    step's seconds (allocation, and compilation under torch.compile); the step count comes from the warm-up
    speed (agreed across ranks through `sync`, which takes a float and returns the max), at least
    `min_steps` (with warmup 0: from the first step's speed). With dtype
    "bf16" the forward and the loss run under autocast to bfloat16; backward runs outside it,
    as PyTorch recommends (its ops follow the dtypes autocast chose for the forward). On cuda the
    device is synchronized before every clock reading."""
    loss_fn = training_loss
    fence = torch.cuda.synchronize if device == "cuda" else (lambda: None)

    def step():
        optimizer.zero_grad(set_to_none=True)
        with precision_scope(dtype, device):
            loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()

    t0 = time.perf_counter()
    step()  # first step allocates (and compiles); not part of the warm-up estimate
    fence()
    first = time.perf_counter() - t0
    t0 = time.perf_counter()
    for _ in range(warmup):
        step()
    fence()
    per_step = (time.perf_counter() - t0) / warmup if warmup else first
    if sync:
        per_step = sync(per_step)
    steps = max(min_steps, int(seconds / max(per_step, 1e-6)))
    if sync:
        sync(0.0)  # barrier: start together
    fence()
    t0 = time.perf_counter()
    for _ in range(steps):
        step()
    fence()
    elapsed = time.perf_counter() - t0
    if sync:
        elapsed = sync(elapsed)
    return steps, elapsed, first


def synthetic_batch(name, batch, seed):
    """A random batch of the model's INPUT shape (NCHW) and random labels of its CLASSES."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(batch, *INPUT[name], generator=g)
    classes = CLASSES[name]
    y = torch.randint(0, classes, (batch,), generator=g)
    return x, y


def result_line(name, config, dtype, batch, timed, threads, ranks):
    """The JSON line of one configuration; timed: time_training's (steps, elapsed, first)."""
    steps, elapsed, first = timed
    return {"framework": "pytorch", "torch": torch.__version__, "model": name, "config": config, "dtype": dtype,
            "ranks": ranks, "threads_per_rank": threads, "global_batch": batch,
            "params": EXPECTED_PARAMS[name], "steps": steps, "seconds": elapsed,
            "ms_per_step": 1e3 * elapsed / steps, "images_per_s": batch * steps / elapsed,
            "compile_s": max(0.0, first - elapsed / steps) if config.endswith("-compile") else None}


def in_format(model, x, channels_last):
    if not channels_last:
        return model, x
    return model.to(memory_format=torch.channels_last), x.contiguous(memory_format=torch.channels_last)


def check_blas():
    if "BLAS_INFO=generic" not in torch.__config__.show():
        return  # a torch with its own BLAS (PyPI's: MKL)
    blas = os.path.realpath("/usr/lib/x86_64-linux-gnu/libblas.so.3")
    if os.path.exists(blas) and "openblas" not in blas:
        raise SystemExit(f"pytorch_anchor.py: libblas.so.3 is {blas} (the reference BLAS): PyTorch's Linear "
                         "layers would run far below their speed; install libopenblas0-openmp "
                         "(scripts/install-deps.sh does)")


def config_name(base, channels_last, compiled):
    return base + ("-cl" if channels_last else "") + ("-compile" if compiled else "")


def run_single(name, batch, threads, warmup, seconds, channels_last, dtype, compiled):
    torch.set_num_threads(threads)
    torch.manual_seed(1)
    x, y = synthetic_batch(name, batch, 2)
    model, x = in_format(make_model(name), x, channels_last)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    if compiled:
        model = torch.compile(model)
    timed = time_training(model, opt, x, y, warmup, seconds, dtype, min_steps=MIN_STEPS[name])
    return result_line(name, config_name(f"1x{threads}", channels_last, compiled), dtype, batch, timed, threads, 1)


def run_cuda(name, batch, warmup, seconds, channels_last, dtype, compiled):
    """One process on the GPU: cudnn.benchmark on, TF32 on only for dtype "tf32"."""
    torch.backends.cudnn.benchmark = True
    torch.backends.cuda.matmul.allow_tf32 = dtype == "tf32"
    torch.backends.cudnn.allow_tf32 = dtype == "tf32"
    torch.manual_seed(1)
    x, y = synthetic_batch(name, batch, 2)
    model, x = in_format(make_model(name).cuda(), x.cuda(), channels_last)
    y = y.cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    if compiled:
        model = torch.compile(model)
    t0 = time.perf_counter()
    timed = time_training(model, opt, x, y, warmup, seconds, dtype, device="cuda", min_steps=MIN_STEPS[name])
    config = "cuda-" + ("compile-" if compiled else "") + ("cl" if channels_last else "nchw")
    line = result_line(name, config, dtype, batch, timed, 1, 1)
    line["gpu"] = torch.cuda.get_device_name()
    line["setup_s"] = time.perf_counter() - t0 - timed[1]  # compilation and warm-up
    return line


def ddp_worker(rank, world, port, name, batch, warmup, seconds, channels_last, dtype, compiled, queue):
    torch.set_num_threads(1)
    cores = sorted(os.sched_getaffinity(0))
    if len(cores) >= world:
        os.sched_setaffinity(0, {cores[rank]})  # one core per rank, as mpirun binds ours
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    torch.manual_seed(1)
    x, y = synthetic_batch(name, batch // world, 2 + rank)
    local, x = in_format(make_model(name), x, channels_last)
    # Compiled inside DDP: torch.compile of the DDP-wrapped model ran eager here (PyTorch 2.14: dynamo
    # skips DDP's forward), so the model is compiled and DDP all-reduces what its backward produces.
    model = nn.parallel.DistributedDataParallel(torch.compile(local) if compiled else local)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)

    def sync_max(v):
        t = torch.tensor([v], dtype=torch.float64)
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
        return float(t.item())

    timed = time_training(model, opt, x, y, warmup, seconds, dtype, sync=sync_max, min_steps=MIN_STEPS[name])
    if rank == 0:
        queue.put(result_line(name, config_name(f"ddp{world}x1", channels_last, compiled), dtype, batch, timed, 1,
                              world))
    # Tear down in order, together: with DDP's reducer still alive when the process group goes, a
    # rank could hang in gloo's destructor after its peer had exited (seen about 1 run in 4).
    dist.barrier()
    del model, local, opt
    dist.destroy_process_group()


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_ddp(name, batch, world, warmup, seconds, channels_last, dtype, compiled):
    if batch % world:
        raise SystemExit(f"pytorch_anchor.py: global batch {batch} of {name} is not divisible by {world} ranks")
    ctx = mp.get_context("spawn")
    queue = ctx.SimpleQueue()
    mp.spawn(ddp_worker, args=(world, free_port(), name, batch, warmup, seconds, channels_last, dtype, compiled, queue),
             nprocs=world, join=True)
    return queue.get()


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--models", nargs="+", default=DEFAULT_MODELS, choices=list(EXPECTED_PARAMS),
                   help="default: mlp lenet lenet_dropout fmnist_sepcnn; the ResNets: resnet20 resnet18 resnet50; "
                        "mobilenet_v2 vgg16 inception_v3")
    p.add_argument("--batch", type=int, default=0,
                   help="global batch for every model (default: 256 mlp/lenet, 128 fmnist_sepcnn and resnet20, "
                        "16 resnet18 and mobilenet_v2, 8 resnet50 and inception_v3, 4 vgg16)")
    p.add_argument("--model-batch", nargs="+", default=[], metavar="MODEL=N",
                   help="global batch of one model (over --batch)")
    p.add_argument("--threads", type=int, default=2, help="threads of the single-process config")
    p.add_argument("--ranks", type=int, default=2, help="processes of the DDP config (1 thread each)")
    p.add_argument("--warmup", type=int, default=None,
                   help="untimed steps after the first, for every model (default: 3, fewer for the torchvision "
                        "networks)")
    p.add_argument("--seconds", type=float, default=3.0, help="timed seconds per model and config")
    p.add_argument("--configs", nargs="+", default=["single", "ddp"], choices=["single", "ddp"])
    p.add_argument("--formats", nargs="+", default=["nchw", "channels_last"], choices=["nchw", "channels_last"],
                   help="memory formats of the convolutional models (mlp always runs plain)")
    p.add_argument("--dtype", nargs="+", default=["fp32"], choices=DTYPES,
                   help="one or more of: fp32, or bf16: forward and loss under torch.autocast(device, dtype=torch.bfloat16); tf32: "
                        "fp32 with TF32 on (cuda only)")
    p.add_argument("--device", default="cpu", choices=["cpu", "cuda"],
                   help="cuda: one process on the GPU (--configs, --threads and --ranks do not apply)")
    p.add_argument("--modes", nargs="+", default=["eager"], choices=["eager", "compile"],
                   help="eager and/or compile: the model under torch.compile (PyTorch 2; on the CPU inductor's C++)")
    p.add_argument("--compile", action="store_true", help="the same as --modes eager compile")
    p.add_argument("--json", action="store_true", help="one JSON line per result")
    p.add_argument("--out", default="", help="also append the JSON lines to this file")
    a = p.parse_args()

    modes = ["eager", "compile"] if a.compile else a.modes
    if "compile" in modes and not hasattr(torch, "compile"):
        raise SystemExit(f"pytorch_anchor.py: torch.compile needs PyTorch 2; this is PyTorch {torch.__version__} "
                         f"({torch.__file__}): run it with perf/anchor-env.sh's Python")
    if a.device == "cpu":
        check_blas()
    elif not torch.cuda.is_available():
        raise SystemExit("pytorch_anchor.py: --device cuda, but PyTorch sees no CUDA device")
    if "tf32" in a.dtype and a.device != "cuda":
        raise SystemExit("pytorch_anchor.py: --dtype tf32 needs --device cuda")
    check_parameter_counts(a.models)
    model_batch = {k: int(v) for k, v in (x.split("=", 1) for x in a.model_batch)}
    results = []
    for name, dtype in ((n, d) for n in a.models for d in a.dtype):
        batch = model_batch.get(name) or a.batch or DEFAULT_BATCH[name]
        warmup = a.warmup if a.warmup is not None else WARMUP[name]
        if not a.json:
            print(f"# {name}: {parameter_count(make_model(name)):,} parameters (scaletrain: "
                  f"{EXPECTED_PARAMS[name]:,}), global batch {batch}, {dtype}"
                  + (" (autocast to bfloat16: forward and loss)" if dtype == "bf16" else ""), flush=True)
        formats = [False] if name == "mlp" else [f == "channels_last" for f in a.formats]
        configs = ["cuda"] if a.device == "cuda" else a.configs
        runs = [(c, m == "compile", f) for m in modes for c in configs for f in formats]
        for config, compiled, channels_last in runs:
            if config == "cuda":
                r = run_cuda(name, batch, warmup, a.seconds, channels_last, dtype, compiled)
            elif config == "single":
                r = run_single(name, batch, a.threads, warmup, a.seconds, channels_last, dtype, compiled)
            else:
                r = run_ddp(name, batch, a.ranks, warmup, a.seconds, channels_last, dtype, compiled)
            results.append(r)
            if a.json:
                print(json.dumps(r), flush=True)
            else:
                print(f"{name:14s} {r['config']:10s} {r['dtype']:4s} batch {batch:4d}  {r['images_per_s']:9.1f} img/s  "
                      f"{r['ms_per_step']:8.2f} ms/step  ({r['steps']} steps)", flush=True)
            if a.out:
                with open(a.out, "a") as f:
                    f.write(json.dumps(r) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
