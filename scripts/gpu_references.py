#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Times PyTorch on the shapes and dtypes of a rooftop report, on the same device, for a
side-by-side comparison (scripts/gpu_summary.py reads the output).

    python3 scripts/gpu_references.py REPORT.json OUT.json [--device cuda|cpu] [--ops a,b]

For every result in the report whose op has a PyTorch counterpart (the table OPS below), the
counterpart runs on fresh random inputs of the same shape and dtype, timed like rooftop's
harness times its ops: warm-up, then one timing per call (CUDA events on the current stream
on a GPU, a synchronized wall clock on a CPU) for at least `--reps` calls and `--min-seconds`,
keeping the minimum and the median. Rates use rooftop's own byte and FLOP counts for that
result, so the GB/s and GFLOP/s of the two sides differ only by their times.

Also measured: the device-to-device copy rate (`d2d_copy_gbs`, bytes read plus written) of two
1 GiB buffers, the figure rooftop's main-memory ceiling is checked against.

PyTorch's eager ops are the reference, not an upper bound: `bias_gelu` is two kernels there
(add, then gelu), `transpose` a strided copy. Where this PyTorch lacks a function
(`rms_norm` before 2.4, `scaled_dot_product_attention` before 2.0) the composite of eager ops
is timed and its `torch_call` says so.
"""
import argparse
import json
import math
import os
import statistics
import sys
import time

import torch
import torch.nn.functional as F

DTYPES = {"fp64": torch.float64, "fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}
NORM_EPS = 1e-5  # the harness's norm_eps
EMBEDDING_VOCAB = 32000  # the harness's vocabulary


def rand(shape, dtype, device, lo=-1.0, hi=1.0):
    return (torch.rand(shape, dtype=torch.float32, device=device) * (hi - lo) + lo).to(dtype)


def rms_norm(x, w):
    if hasattr(F, "rms_norm"):
        return "F.rms_norm", lambda: F.rms_norm(x, (x.shape[-1],), w, NORM_EPS)
    return "x * rsqrt(mean(x^2) + eps) * w (eager ops; no F.rms_norm in this PyTorch)", lambda: (
        x * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + NORM_EPS).to(x.dtype) * w)


def attention(q, k, v, causal):
    if hasattr(F, "scaled_dot_product_attention"):
        call = lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal)
        try:  # PyTorch's FlashAttention path, where this PyTorch and device have it
            from torch.nn.attention import SDPBackend, sdpa_kernel
            with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
                call()
            def flash():
                with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
                    return F.scaled_dot_product_attention(q, k, v, is_causal=causal)
            return "F.scaled_dot_product_attention (flash backend)", flash
        except (ImportError, RuntimeError):
            return "F.scaled_dot_product_attention (default backend)", call
    scale = 1.0 / math.sqrt(q.shape[-1])
    seq_q, seq_k = q.shape[-2], k.shape[-2]
    hidden = torch.ones(seq_q, seq_k, dtype=torch.bool, device=q.device).triu(1) if causal else None
    def eager():
        scores = (q @ k.transpose(-1, -2)) * scale
        if hidden is not None:
            scores = scores.masked_fill(hidden, float("-inf"))
        return torch.softmax(scores, -1) @ v
    return "softmax(q k^T scale) v (eager ops; no scaled_dot_product_attention in this PyTorch)", eager


def setup(op, shape, dtype, device):
    """(description, callable) of op's PyTorch counterpart on fresh inputs, or None."""
    r = lambda *s, **kw: rand(s, dtype, device, **kw)
    if op in ("copy", "scale", "add", "triad", "dot", "sum", "max", "nrm2", "relu", "gelu", "gelu_erf", "silu"):
        n = shape[0]
        x, y, z = r(n), r(n), torch.empty(n, dtype=dtype, device=device)
        return {
            "copy": ("z.copy_(x)", lambda: z.copy_(x)),
            "scale": ("torch.mul(x, a, out=z)", lambda: torch.mul(x, 0.5, out=z)),
            "add": ("torch.add(x, y, out=z)", lambda: torch.add(x, y, out=z)),
            "triad": ("torch.add(x, y, alpha=a, out=z)", lambda: torch.add(x, y, alpha=0.5, out=z)),
            "dot": ("torch.dot(x, y)", lambda: torch.dot(x, y)),
            "sum": ("x.sum()", lambda: x.sum()),
            "max": ("x.max()", lambda: x.max()),
            "nrm2": ("torch.linalg.vector_norm(x)", lambda: torch.linalg.vector_norm(x)),
            "relu": ("torch.relu(x)", lambda: torch.relu(x)),
            "gelu": ("F.gelu(x, approximate='tanh')", lambda: F.gelu(x, approximate="tanh")),
            "gelu_erf": ("F.gelu(x)", lambda: F.gelu(x)),
            "silu": ("F.silu(x)", lambda: F.silu(x)),
        }[op]
    if op in ("bias_gelu", "softmax", "layernorm", "rmsnorm"):
        rows, cols = shape
        x, w, b = r(rows, cols, lo=-4, hi=4), r(cols, lo=0.5, hi=1.5), r(cols)
        if op == "bias_gelu":
            return "F.gelu(x + b, approximate='tanh') (two kernels)", lambda: F.gelu(x + b, approximate="tanh")
        if op == "softmax":
            return "torch.softmax(x, -1)", lambda: torch.softmax(x, -1)
        if op == "layernorm":
            return "F.layer_norm(x, (cols,), w, b, eps)", lambda: F.layer_norm(x, (cols,), w, b, NORM_EPS)
        return rms_norm(x, w)
    if op == "embedding":
        tokens, dim = shape
        table = r(EMBEDDING_VOCAB, dim)
        ids = torch.randint(0, EMBEDDING_VOCAB, (tokens,), dtype=torch.int64, device=device)
        return "F.embedding(ids, table)", lambda: F.embedding(ids, table)
    if op == "transpose":
        rows, cols = shape
        x, out = r(rows, cols), torch.empty(cols, rows, dtype=dtype, device=device)
        return "out.copy_(x.t())", lambda: out.copy_(x.t())
    if op == "gemm":
        m, n, k = shape
        a, b, c = r(m, k), r(k, n), torch.empty(m, n, dtype=dtype, device=device)
        return "torch.matmul(a, b, out=c) (TF32 off)", lambda: torch.matmul(a, b, out=c)
    if op in ("attention", "attention_causal"):
        q, k, v = (r(*shape) for _ in range(3))
        return attention(q, k, v, op == "attention_causal")
    return None


class Timer:
    """Seconds of one call: CUDA events on the current stream, or a synchronized wall clock.
    On the GPU the start event is queued behind a short device-side sleep (about 0.3 ms), so
    that Python's and PyTorch's dispatch of the call (tens of microseconds, more than a Kokkos
    launch) happens while the GPU is still busy and is not timed: small problems (gemm at
    n = 512 runs about 10 us) would otherwise be compared by their host overheads. rooftop's
    own times include its launch, so the comparison leans against rooftop, not for it."""

    def __init__(self, device):
        self.cuda = device.startswith("cuda")
        self.sleep = getattr(torch.cuda, "_sleep", None) if self.cuda else None

    def __call__(self, f):
        if self.cuda:
            start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            if self.sleep is not None:
                self.sleep(500_000)  # GPU clock cycles
            start.record()
            f()
            stop.record()
            stop.synchronize()
            return start.elapsed_time(stop) * 1e-3
        t0 = time.perf_counter()
        f()
        return time.perf_counter() - t0


def time_call(timer, f, reps, min_seconds):
    f()  # warm-up (and first-call costs: cuBLAS handles, kernel selection)
    times = []
    while len(times) < reps or sum(times) < min_seconds:
        times.append(timer(f))
        if len(times) >= 100 * reps:
            break
    return min(times), statistics.median(times)


def d2d_copy_gbs(timer, device, reps, min_seconds):
    n = 1 << 28  # fp32: 1 GiB each
    src = torch.rand(n, device=device)
    dst = torch.empty_like(src)
    best, _ = time_call(timer, lambda: dst.copy_(src), reps, min_seconds)
    if not torch.equal(dst, src):
        raise RuntimeError("d2d copy: destination differs from source")
    return 2 * 4 * n / best * 1e-9


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("report")
    ap.add_argument("out")
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--ops", default="", help="comma-separated ops to compare (default: every op with a counterpart)")
    ap.add_argument("--reps", type=int, default=25)
    ap.add_argument("--min-seconds", type=float, default=0.25)
    args = ap.parse_args()
    if args.reps < 1 or args.min_seconds < 0:
        ap.error("--reps must be 1 or more and --min-seconds 0 or more")
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        sys.exit(f"gpu_references: --device {args.device}, but PyTorch {torch.__version__} sees no CUDA device "
                 "(a CPU-only build, or one too old for the driver?)")

    torch.backends.cuda.matmul.allow_tf32 = False  # fp32 GEMM against fp32 SGEMM, not TF32
    torch.backends.cudnn.allow_tf32 = False
    torch.manual_seed(int(time.time()))
    with open(args.report) as f:
        report = json.load(f)
    wanted = set(filter(None, args.ops.split(",")))
    in_report = sorted({r["op"] for r in report["ops"]})
    unknown = sorted(wanted - set(in_report))
    if unknown:  # a misspelt name would otherwise time nothing and still pass
        ap.error(f"--ops names {', '.join(unknown)}, not in {args.report} (its ops: {', '.join(in_report) or 'none'})")
    timer = Timer(args.device)
    device_name = torch.cuda.get_device_name() if args.device.startswith("cuda") else "cpu"

    print(f"[references] PyTorch {torch.__version__} on {device_name}", file=sys.stderr)
    out = {"schema": "rooftop-references/1", "torch_version": torch.__version__, "device": device_name,
           "report_device": report["system"].get("device", ""),
           "report_timestamp": report["system"].get("timestamp", ""), "ops": []}
    out["d2d_copy_gbs"] = d2d_copy_gbs(timer, args.device, args.reps, args.min_seconds)
    print(f"[references] device-to-device copy {out['d2d_copy_gbs']:.1f} GB/s", file=sys.stderr)

    def save():  # after every op, so that a run stopped part way keeps what it timed
        with open(args.out + ".tmp", "w") as f:
            json.dump(out, f, indent=1)
        os.replace(args.out + ".tmp", args.out)

    for res in report["ops"]:
        op, dtype, shape = res["op"], res["dtype"], res["shape"]
        if (wanted and op not in wanted) or dtype not in DTYPES:
            continue
        entry = {"op": op, "dtype": dtype, "shape": shape}
        try:
            made = setup(op, shape, DTYPES[dtype], args.device)
            if made is None:
                continue
            entry["torch_call"], call = made
            entry["seconds_min"], entry["seconds_median"] = time_call(timer, call, args.reps, args.min_seconds)
        except Exception as e:  # e.g. a dtype this PyTorch lacks on this device, or out of memory
            entry["error"] = (str(e).splitlines() or [type(e).__name__])[0]
            out["ops"].append(entry)
            save()
            print(f"[references] {op} {dtype} {shape}: {entry['error']}", file=sys.stderr)
            continue
        finally:
            made = call = None
            if args.device.startswith("cuda"):
                torch.cuda.empty_cache()
        entry["gbs"] = res["bytes"] / entry["seconds_min"] * 1e-9
        entry["gflops"] = res["flops"] / entry["seconds_min"] * 1e-9
        entry["rooftop_seconds_min"] = res["seconds_min"]
        entry["rooftop_vs_torch"] = entry["seconds_min"] / res["seconds_min"]  # > 1: rooftop faster
        out["ops"].append(entry)
        save()
        print(f"[references] {op:10s} {dtype} {'x'.join(map(str, shape)):>22s}: torch {entry['gbs']:8.1f} GB/s "
              f"{entry['gflops']:9.1f} GFLOP/s, rooftop/torch {entry['rooftop_vs_torch']:.2f}x", file=sys.stderr)

    save()
    print(f"[references] wrote {args.out}", file=sys.stderr)
    if not out["ops"]:
        sys.exit(f"gpu_references: no result of {args.report}" + (f" among --ops {args.ops}" if wanted else "") +
                 " has a PyTorch counterpart: nothing was compared")


if __name__ == "__main__":
    main()
