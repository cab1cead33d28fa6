"""Device check (issue 11, item 6): for a session lent a CUDA GPU. Prepared, not yet
run on a GPU (none was lent while it was written).

On the tiny toy exported on the CPU:
1. `check --device cuda` (fake tensors) names its first failing node;
2. `profile --device cuda:0` (a real run) must fail at that same node;
3. after `retarget --device cuda`, check passes and profile runs on cuda:0 in fp32 and
   bf16; printed: the CUDA-event per-node sum against the uninstrumented forward
   (target 1/1.5 .. 1.5) and the instrumented run's cost (event overhead).
Exit 1 on a mismatch or a miss; exit 2 (nothing run) without CUDA.

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
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
