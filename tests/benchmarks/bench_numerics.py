"""`numerics` against the runs it compares (issue 30): memory and speed, side by side.

A GPT-2 big enough that its weights, not torch's import, fill the process (hidden
512, 6 layers, vocabulary 8192: 25M parameters, ~100 MB of fp32 weights; sequence
128) is exported once; then, in one run of this script:

- memory: peak RSS of a child that loads the archive and runs one forward, against
  the numerics job's child for each candidate kind; both less the RSS of a child
  that only imports and loads (what neither can do without), and whole. Target:
  numerics <= 2.5x one forward (above that baseline).
- speed, in one process: the best of --runs of (reference forward + candidate
  forward), each FX's generated code (uninstrumented), against the best of --runs
  of the lockstep comparison of the same two runs. Target <= 3x.

    OMP_NUM_THREADS=1 python tests/benchmarks/bench_numerics.py [--runs N] [--kinds on,precision]
"""

from __future__ import annotations

import argparse
import io
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import measure  # noqa: E402

MEMORY_TARGET = 2.5
SPEED_TARGET = 3.0
SEQ = 128

FORWARD = """
import sys, torch
from inspector.jobs.graph_spec import GraphRunSpec
from inspector.jobs.graph_run import load_for_run
from inspector.jobs.inputs import flat_arguments, user_values
from inspector.jobs.protocol import Emitter
import io
spec = GraphRunSpec(file=sys.argv[1])
loaded = load_for_run(spec, Emitter(io.StringIO()), payloads="cpu")
name = loaded.names[0]
ep = loaded.programs[name]
args = flat_arguments(ep, user_values(torch, loaded.plans[name], torch.device("cpu")),
                      lambda k, t, v: v)
if sys.argv[2] == "forward":
    with torch.no_grad():
        ep.graph_module(*args)
"""


def export(path: Path) -> None:
    import torch
    import transformers as tf

    torch.manual_seed(0)
    model = tf.GPT2LMHeadModel(tf.GPT2Config(vocab_size=8192, n_embd=512, n_layer=6,
                                             n_head=8, n_positions=SEQ,
                                             use_cache=False)).eval()
    with torch.no_grad():
        ep = torch.export.export(model, (torch.zeros(1, SEQ, dtype=torch.long),))
    torch.export.save(ep, str(path))


def candidate_args(kind: str, other: Path) -> list[str]:
    return {"on": ["--on", "cpu"], "precision": ["--precision", "bf16"],
            "with": ["--with", str(other)], "decompose": ["--decompose"]}[kind]


def memory(path: Path, kinds: list[str]) -> bool:
    py = sys.executable
    base = measure([py, "-c", FORWARD, str(path), "load"]).peak_rss_mb
    fwd = measure([py, "-c", FORWARD, str(path), "forward"]).peak_rss_mb
    print(f"memory (peak RSS): load only {base:.0f} MB, load + one forward {fwd:.0f} MB "
          f"(the forward's own: {fwd - base:.0f} MB)")
    ok = True
    for kind in kinds:
        got = measure([py, "-m", "inspector.jobs", "numerics", str(path), "--device", "cpu",
                       "--candidate", kind, *_child_value(kind, path)]).peak_rss_mb
        net = (got - base) / max(fwd - base, 1.0)
        whole = got / fwd
        good = whole <= MEMORY_TARGET
        ok &= good
        print(f"  numerics {kind:10s} {got:7.0f} MB: {whole:.2f}x the forward's process "
              f"({'within' if good else 'OVER'} {MEMORY_TARGET}x); above the loaded baseline "
              f"{got - base:.0f} MB = {net:.2f}x the forward's own")
    return ok


def _child_value(kind: str, path: Path) -> list[str]:
    value = {"on": "cpu", "precision": "bf16", "with": str(path)}.get(kind)
    return ["--value", value] if value else []


def speed(path: Path, kinds: list[str], runs: int) -> bool:
    import torch

    from inspector.jobs.graph_spec import GraphRunSpec
    from inspector.jobs.numerics import compare_program, make_candidate, prepare
    from inspector.jobs.numerics_spec import NumericsSpec
    from inspector.jobs.protocol import Emitter

    ok = True
    print(f"speed, best of {runs} (threads {torch.get_num_threads()}):")
    for kind in kinds:
        value = {"on": "cpu", "precision": "bf16", "with": str(path)}.get(kind, "")
        spec = NumericsSpec(GraphRunSpec(file=str(path)), kind, value).validate()
        emit = Emitter(io.StringIO())
        prepared = prepare(torch, spec, emit)
        name = prepared.loaded.names[0]
        built = make_candidate(torch, spec, prepared, name)
        cand = built.cand
        plain, compared = [], []
        for _ in range(runs):  # alternated, so drift on a busy machine hits both
            with torch.no_grad():
                t = time.perf_counter()
                built.ep.graph_module(*built.ref_args)
                if cand.threads:
                    torch.set_num_threads(cand.threads)
                cand.gm(*cand.args)
                if cand.threads:
                    torch.set_num_threads(prepared.ref_threads)
                plain.append(time.perf_counter() - t)
            t = time.perf_counter()
            record = compare_program(torch, spec, prepared, name, emit, built=built)
            compared.append(time.perf_counter() - t)
        ratio = min(compared) / min(plain)
        good = ratio <= SPEED_TARGET
        ok &= good
        print(f"  {kind:10s} two forwards {1000 * min(plain):8.1f} ms, lockstep comparison "
              f"{1000 * min(compared):8.1f} ms ({record['compared']} nodes): {ratio:.2f}x "
              f"({'within' if good else 'OVER'} {SPEED_TARGET}x)")
    return ok


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--kinds", default="on,precision,with,decompose")
    args = parser.parse_args()
    kinds = [k for k in args.kinds.split(",") if k]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "gpt2-25m.pt2"
        started = time.perf_counter()
        export(path)
        print(f"exported {path.name}: {path.stat().st_size / 1e6:.0f} MB in "
              f"{time.perf_counter() - started:.1f} s; load {os.getloadavg()[0]:.1f}")
        ok = memory(path, kinds)
        ok &= speed(path, kinds, args.runs)
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
