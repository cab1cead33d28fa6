"""Device check (issue 11, item 6): for a session lent a CUDA GPU. Prepared, not yet
run on a GPU (none was lent while it was written).

On the tiny toy exported on the CPU:
1. `check --device cuda` (fake tensors) names its first failing node;
2. `profile --device cuda:0` (a real run) must fail at that same node;
3. after `retarget --device cuda`, check passes and profile runs on cuda:0 in fp32 and
   bf16; printed: the CUDA-event per-node sum against the uninstrumented forward
   (target 1/1.5 .. 1.5) and the instrumented run's cost (event overhead).
4. numerics (issue 30): `--device cpu --on cuda:0` on the CPU export (the baked
   device literals moved in the candidate's copy of the graph): every node compared,
   the first node over fp32's tolerance and the largest error printed (a CPU/GPU
   difference, expected small); `--device cuda:0 --precision bf16` on the retargeted
   archive: the first node over bf16's tolerance, beside the CPU's answer for the same
   archive (`--device cpu --precision bf16` on the CPU export); and `--device cuda:0
   --on cuda:0` (the same GPU twice): every node's error exactly 0 (a run-to-run
   nondeterminism check of the GPU kernels).
5. memory (issue 32): `profile --memory --device cuda:0` on the retargeted archive:
   each node's allocation measured with torch.cuda.memory_allocated /
   max_memory_allocated beside the static plan; printed: the peak measured against
   the estimate (the caching allocator's and cuBLAS workspace's share) and the nodes
   whose new storages differ from the plan; must be CUDA's method and the peak ratio
   at least 1 (a node holds at least what the plan says is live).
Exit 1 on a mismatch or a miss; exit 2 (nothing run) without CUDA.
The CPU paths of step 4 are what tests/jobs/test_numerics_torch.py covers.

    python tests/benchmarks/bench_cuda.py [--repeats N]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

TARGET = 1.5


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "inspector", *args], capture_output=True,
                          text=True)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=20)
    args = parser.parse_args()
    import torch

    if not torch.cuda.is_available():
        print("no CUDA device here: nothing run")
        return 2
    ok = True
    with tempfile.TemporaryDirectory() as tmp:
        toy = Path(tmp) / "toy.pt2"
        subprocess.run([sys.executable, "-m", "inspector", "export", "--preset", "tiny",
                        "-o", str(toy)], check=True)
        fake = json.loads(cli("check", str(toy), "--device", "cuda", "--program", "decoder",
                              "--json").stdout)
        (fp,) = fake["programs"]
        real = cli("profile", str(toy), "--device", "cuda:0", "--program", "decoder",
                   "--warmup", "0", "--repeats", "1", "--json")
        (rp,) = json.loads(real.stdout)["programs"]
        first_fake = fp["failures"][0]["node"] if fp["failures"] else None
        first_real = rp["failures"][0]["node"] if rp["failures"] else None
        same = first_fake is not None and first_fake == first_real
        ok &= same
        print(f"CPU export on cuda: check names {first_fake}, the real run fails at "
              f"{first_real}: {'same node' if same else 'MISMATCH'}")
        moved = Path(tmp) / "toy-cuda.pt2"
        subprocess.run([sys.executable, "-m", "inspector", "retarget", str(toy), "--device",
                        "cuda", "-o", str(moved)], check=True, capture_output=True)
        passed = cli("check", str(moved), "--device", "cuda").returncode == 0
        ok &= passed
        print(f"after retarget: check {'passes' if passed else 'FAILS'}")
        for precision in ("fp32", "bf16"):
            proc = cli("profile", str(moved), "--device", "cuda:0", "--program", "decoder",
                       "--input", "input_ids=1x32", "--warmup", "5", "--repeats",
                       str(args.repeats), "--precision", precision, "--json")
            if proc.returncode != 0:
                print(f"profile {precision} on cuda:0 FAILED: {proc.stderr.strip()[-300:]}")
                ok = False
                continue
            result = json.loads(proc.stdout)
            (p,) = result["programs"]
            fwd = statistics.median(p["runs"]["forward_ms"])
            nodes = statistics.median(p["runs"]["node_ms"])
            inst = statistics.median(p["runs"]["instrumented_ms"])
            within = 1 / TARGET <= nodes / fwd <= TARGET
            ok &= within
            print(f"{precision} on {result['device_name']} ({result['timer']}): forward "
                  f"{fwd:.3f} ms, nodes sum {nodes:.3f} ms ({nodes / fwd:.2f}x, "
                  f"{'within' if within else 'OUTSIDE'} 1/{TARGET}..{TARGET}), instrumented "
                  f"{inst:.3f} ms ({inst / fwd:.2f}x: the events' and interpreter's cost)")
        ok &= numerics_on_cuda(toy, moved)
        ok &= memory_on_cuda(moved)
    return 0 if ok else 1


def memory_on_cuda(moved: Path) -> bool:
    from inspector.jobs.memory_measure import CUDA_METHOD

    proc = cli("profile", str(moved), "--device", "cuda:0", "--program", "decoder", "--memory",
               "--input", "input_ids=4x64", "--warmup", "1", "--repeats", "1", "--json")
    if proc.returncode != 0:
        print(f"profile --memory on cuda:0 FAILED: {proc.stderr.strip()[-300:]}")
        return False
    (p,) = json.loads(proc.stdout)["programs"]
    m = p["memory"]
    differ = [r["name"] for r in m["nodes"] if r["allocated_bytes"] != r["estimated_new_bytes"]]
    peak = m["peak"]
    good = m["method"] == CUDA_METHOD and peak["ratio"] >= 1.0
    print(f"memory on cuda:0 ({m['method']}): peak measured {peak['measured_bytes']:,} B at "
          f"{peak['measured_node']}, estimated {peak['estimated_bytes']:,} B at "
          f"{peak['estimated_node']} (ratio {peak['ratio']}); {len(differ)} of {len(m['nodes'])} nodes allocate other "
          f"than the plan's new storages{': ' + ', '.join(differ[:8]) if differ else ''}"
          f"{'' if good else ' — MISS'}")
    return good


def _numerics(*args: str) -> dict:
    proc = cli("numerics", *args, "--program", "decoder", "--json")
    if proc.returncode not in (0, 1):
        raise RuntimeError(proc.stderr.strip()[-400:])
    return json.loads(proc.stdout)["programs"][0]


def numerics_on_cuda(toy: Path, moved: Path) -> bool:
    ok = True
    try:
        p = _numerics(str(toy), "--device", "cpu", "--on", "cuda:0")
        worst = max(p["nodes"], key=lambda n: n["max_abs"] or 0.0)
        ran = p["ok"] and p["compared"] > 100
        ok &= ran
        print(f"numerics cpu vs cuda:0: {p['compared']} nodes, {p['failing']} over fp32 "
              f"tolerance, first {p['first_over_tolerance']}; largest error "
              f"{worst['max_abs']:.3g} at {worst['node']} ({'ran' if ran else 'FAILED'})")
        gpu = _numerics(str(moved), "--device", "cuda:0", "--precision", "bf16")
        cpu = _numerics(str(toy), "--device", "cpu", "--precision", "bf16")
        print(f"numerics bf16: first over tolerance on cuda:0 {gpu['first_over_tolerance']}, "
              f"on cpu {cpu['first_over_tolerance']} ({gpu['failing']} / {cpu['failing']} "
              "nodes over)")
        ok &= gpu["ok"]
        same = _numerics(str(moved), "--device", "cuda:0", "--on", "cuda:0")
        exact = same["ok"] and all(n["max_abs"] == 0 for n in same["nodes"])
        print(f"numerics cuda:0 twice: {'every node exactly equal' if exact else 'NOT exact'} "
              f"({same['compared']} nodes)")
        ok &= same["ok"]
    except RuntimeError as exc:
        print(f"numerics on cuda FAILED: {exc}")
        ok = False
    return ok


if __name__ == "__main__":
    raise SystemExit(main())
