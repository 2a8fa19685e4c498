#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Summarizes a GPU run of scripts/gpu-check.sh: the ceilings, rooftop beside PyTorch, and the
GPU targets of the project's issues, each marked met or not.

    python3 scripts/gpu_summary.py DIR     reads DIR/report.json, DIR/references.json and
                                           DIR/status.txt (each optional but the report),
                                           writes DIR/summary.md and prints it; exit
                                           status 1 unless every target was met

A target that could not be checked (no references.json, or one made from another run's
report.json) counts as not met; so do the report's failed instances ("errors") and a run
stopped before its last round.

Targets checked (the datasheet FP32 peak of H100 SXM and H200 is 66.9 TFLOP/s):
- main-memory (HBM) ceiling >= 0.90x PyTorch's device-to-device copy rate;
- STREAM-family ops (copy, scale, add, triad, dot) in main memory >= 0.90 of the ceiling;
- FP32 peak ceiling >= 0.80x 66.9 TFLOP/s; pinned host-to-device >= 1.5x pageable;
- softmax, layernorm, rmsnorm in main memory >= 0.85 of the ceiling and >= 1.0x PyTorch;
- fp32 gemm >= 0.6x cuBLAS (PyTorch, TF32 off); bf16 attention >= 0.3x PyTorch's SDPA.
"""
import json
import os
import sys

DATASHEET_FP32_GFLOPS = 66.9e3
STREAM_OPS = ("copy", "scale", "add", "triad", "dot")
ROW_OPS = ("softmax", "layernorm", "rmsnorm")


def load(path):
    if not os.path.exists(path):
        return None
    with open(path) as f:
        return json.load(f)


def shape_str(shape):
    return "x".join(str(s) for s in shape)


def error_label(e):
    """An "errors" entry's op, dtype, shape and stage, where it has them (a ceilings entry has
    only "during")."""
    parts = [e["op"], e.get("dtype", ""), shape_str(e["shape"]) if "shape" in e else ""]
    if e.get("during"):
        parts.append("during " + e["during"])
    return " ".join(p for p in parts if p)


def check(lines, ok, what):
    lines.append(f"- [{'x' if ok else ' '}] {what}")
    return ok


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__.split("\n\n")[1])
    d = sys.argv[1]
    report = load(os.path.join(d, "report.json"))
    if report is None:
        sys.exit(f"gpu_summary: no {d}/report.json (run the roofline step first)")
    refs = load(os.path.join(d, "references.json"))
    # References are timed beside one report: those of another run's (the roofline step run
    # again since) would pair its shapes with figures of a different run.
    stale_refs = None
    if refs is not None and refs.get("report_timestamp") != report["system"].get("timestamp"):
        stale_refs = (f"references.json was made from the report of {refs.get('report_timestamp', 'an unrecorded time')}, "
                      f"not this one ({report['system'].get('timestamp')}): run the references step again")
        refs = None
    # And on the report's GPU: PyTorch on the CPU (or another GPU) is no reference for it.
    if refs is not None and not report["system"].get("device", "").startswith(refs.get("device") or "?"):
        stale_refs = (f"references.json was timed on {refs.get('device') or 'an unrecorded device'}, not the report's "
                      f"{report['system'].get('device', '?')}: run the references step on the GPU")
        refs = None
    status_path = os.path.join(d, "status.txt")
    status = open(status_path).read().strip().splitlines() if os.path.exists(status_path) else []

    system, ceil = report["system"], report["ceilings"]
    bw, peak = ceil["bandwidth_gbs"], ceil["peak_gflops"]
    dram = bw["dram"]
    main_memory = [r for r in report["ops"] if not r.get("cache_resident", False)]
    ref_of = {}
    if refs:
        for e in refs["ops"]:
            ref_of[(e["op"], e["dtype"], tuple(e["shape"]))] = e

    out = [f"# rooftop on {system.get('device', '?')}", "",
           f"{system.get('backend')} backend, Kokkos {system.get('kokkos_version')}, git {system.get('git')}, "
           f"{system.get('timestamp')}; {len(report['ops'])} results, "
           f"{sum(1 for r in report['ops'] if r.get('verified'))} verified.", ""]
    if status:
        out += ["## Steps (status.txt)", ""] + [f"- {s}" for s in status] + [""]

    out += ["## Ceilings", "",
            f"- main memory {dram:.0f} GB/s (copy {bw.get('dram_copy', 0):.0f}, add {bw.get('dram_add', 0):.0f}, "
            f"triad {bw.get('dram_triad', 0):.0f}, read {bw.get('dram_read', 0):.0f}); L2 {bw.get('llc', 0):.0f} GB/s",
            f"- FP32 {peak['fp32'] / 1e3:.1f} TFLOP/s, FP64 {peak['fp64'] / 1e3:.1f} TFLOP/s; "
            + (f"matrix units bf16 {peak['bf16_matrix'] / 1e3:.1f}, fp16 {peak.get('fp16_matrix', 0) / 1e3:.1f} TFLOP/s; "
               if "bf16_matrix" in peak else "")
            + f"launch overhead {ceil.get('launch_overhead_us', 0):.2f} us"]
    if "h2d_pageable" in bw:
        out.append(f"- host to device {bw['h2d_pageable']:.1f} GB/s pageable, {bw['h2d_pinned']:.1f} pinned; "
                   f"device to host {bw['d2h_pageable']:.1f} pageable, {bw['d2h_pinned']:.1f} pinned")
    if refs:
        out.append(f"- PyTorch {refs['torch_version']} device-to-device copy {refs['d2d_copy_gbs']:.0f} GB/s "
                   f"(bytes read + written)")
    out.append("")

    if refs:
        out += ["## rooftop beside PyTorch (same shapes, same run)", "",
                "| op | dtype | shape | rooftop GB/s | PyTorch GB/s | rooftop GFLOP/s | PyTorch GFLOP/s | rooftop / PyTorch | PyTorch call |",
                "|---|---|---|---|---|---|---|---|---|"]
        for r in report["ops"]:
            e = ref_of.get((r["op"], r["dtype"], tuple(r["shape"])))
            if e is None:
                continue
            if "error" in e:
                out.append(f"| {r['op']} | {r['dtype']} | {shape_str(r['shape'])} | {r['gbs']:.0f} | | | | | {e['error']} |")
                continue
            out.append(f"| {r['op']} | {r['dtype']} | {shape_str(r['shape'])} | {r['gbs']:.0f} | {e['gbs']:.0f} | "
                       f"{r['gflops']:.0f} | {e['gflops']:.0f} | {e['rooftop_vs_torch']:.2f} | {e['torch_call']} |")
        out.append("")

    out += ["## Targets", ""]
    # A figure counts only if its output was right: any unverified result fails the targets.
    unverified = [r for r in report["ops"] if not r.get("verified")]
    met = check(out, not unverified, "every result verified against float64" +
                "".join(f"; {r['op']} {r['dtype']} {shape_str(r['shape'])} not" for r in unverified[:8]))
    errors = report.get("errors", [])
    met &= check(out, not errors, "every planned instance ran" +
                 "".join(f"; {error_label(e)} failed: {e['error']}" for e in errors[:8]))
    rounds = report.get("rounds", {})
    met &= check(out, rounds.get("completed", 0) >= rounds.get("planned", 1),
                 f"every round completed ({rounds.get('completed', '?')} of {rounds.get('planned', '?')})")
    if refs:
        met &= check(out, dram >= 0.90 * refs["d2d_copy_gbs"],
                     f"main-memory ceiling {dram:.0f} GB/s >= 0.90x PyTorch's copy {refs['d2d_copy_gbs']:.0f} GB/s "
                     f"({dram / refs['d2d_copy_gbs']:.2f}x)")
    else:
        met &= check(out, False, "PyTorch references: " + (stale_refs or "no references.json (run the references step)") +
                     "; the targets beside PyTorch are not checked")
    # A target whose results are not in the report (a run narrowed with --ops) is not met: it
    # was not measured.
    stream = [r for r in main_memory if r["op"] in STREAM_OPS]
    if stream:
        worst = min(stream, key=lambda r: r["roof_fraction"])
        met &= check(out, worst["roof_fraction"] >= 0.90,
                     f"STREAM-family ops in main memory >= 0.90 of the ceiling (lowest: {worst['op']} {worst['dtype']} "
                     f"{worst['roof_fraction']:.2f})")
    else:
        met &= check(out, False, "STREAM-family ops in main memory >= 0.90 of the ceiling: none measured")
    met &= check(out, peak["fp32"] >= 0.80 * DATASHEET_FP32_GFLOPS,
                 f"FP32 peak {peak['fp32'] / 1e3:.1f} TFLOP/s >= 0.80x 66.9 ({peak['fp32'] / DATASHEET_FP32_GFLOPS:.2f}x)")
    if "h2d_pageable" in bw:
        met &= check(out, bw["h2d_pinned"] >= 1.5 * bw["h2d_pageable"],
                     f"pinned host-to-device >= 1.5x pageable ({bw['h2d_pinned'] / bw['h2d_pageable']:.2f}x)")
    else:
        met &= check(out, False, "pinned host-to-device >= 1.5x pageable: not measured (no host <-> device ceilings)")
    for op in sorted(ROW_OPS):
        if not any(r["op"] == op for r in main_memory):
            met &= check(out, False, f"{op} in main memory >= 0.85 of the ceiling and >= 1.0x PyTorch: not measured")
    for r in (r for r in main_memory if r["op"] in ROW_OPS):
        what = f"{r['op']} {r['dtype']} {shape_str(r['shape'])}: {r['gbs']:.0f} GB/s = {r['gbs'] / dram:.2f} of the ceiling (>= 0.85)"
        e = ref_of.get((r["op"], r["dtype"], tuple(r["shape"])))
        ok = r["gbs"] >= 0.85 * dram
        if e and "error" not in e:
            what += f", {e['rooftop_vs_torch']:.2f}x PyTorch (>= 1.0)"
            ok = ok and e["rooftop_vs_torch"] >= 1.0
        else:
            what += ", PyTorch not measured (>= 1.0 not checked)"
            ok = False
        met &= check(out, ok, what)
    for op, dtype, target, name in (("gemm", "fp32", 0.6, "cuBLAS SGEMM"), ("attention", "bf16", 0.3, "PyTorch SDPA")):
        if not any(r["op"] == op and r["dtype"] == dtype for r in report["ops"]):
            met &= check(out, False, f"{op} {dtype} >= {target}x {name}: not measured")
        for r in (r for r in report["ops"] if r["op"] == op and r["dtype"] == dtype):
            e = ref_of.get((op, dtype, tuple(r["shape"])))
            if e and "error" not in e:
                met &= check(out, e["rooftop_vs_torch"] >= target,
                             f"{op} {dtype} {shape_str(r['shape'])}: {r['gflops'] / 1e3:.1f} TFLOP/s, "
                             f"{e['rooftop_vs_torch']:.2f}x {name} (>= {target})")
            else:
                met &= check(out, False, f"{op} {dtype} {shape_str(r['shape'])}: {r['gflops'] / 1e3:.1f} TFLOP/s, "
                                         f"{name} not measured (>= {target} not checked)")
    above = [r for r in report["ops"] if r["roof_fraction"] > 1.05]
    met &= check(out, not above, "no result above its roof by more than 5%" +
                 "".join(f"; {r['op']} {r['dtype']} {shape_str(r['shape'])} at {r['roof_fraction']:.2f}" for r in above[:8]))
    if any("FAIL" in s for s in status):
        met = check(out, False, "every step passed (see above)")
    out += ["", f"All targets met: {'yes' if met else 'no'}."]

    text = "\n".join(out) + "\n"
    with open(os.path.join(d, "summary.md"), "w") as f:
        f.write(text)
    print(text, end="")
    sys.exit(0 if met else 1)


if __name__ == "__main__":
    main()
