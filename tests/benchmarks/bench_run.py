"""Benchmark (issue 6): the run job's timing and event streaming vs a bare loop.

Side by side in one run, interleaved, on CPU with the tiny preset:
  bare  this file with --bare: load the archive the same way (jobs/load.py), then the
        same greedy generation with one perf_counter around each whole generation:
        no per-step timer, no events.
  job   `python -m inspector.jobs run` (per-step timing, one sample event per token);
        its result's total_ms is the same whole-generation time.
Targets (issue 6): job per generation <= 1.03x bare, the same token ids; a cancel
mid-run ends the child (through its handler) within 1 s. Exit 1 on a miss. Also
reported: whole-process wall.

    python tests/benchmarks/bench_run.py [ARCHIVE] [--batch N] [--tokens N] [--repeats N]
                                         [--device DEV]

--calls: where a token's time goes (the exported decoder with and without torch's
per-call input checks, eager, and the run job against a bare loop of the same calls):

    python tests/benchmarks/bench_run.py --calls [ARCHIVE] --tokens 32 --batch 1

--table: the seed blog's experiment on one device (for a session with a GPU):
export vs eager, with and without torch.compile, fp32 and bf16, all through the run job,
on an archive exported on that device (so no baked cpu device):

    python tests/benchmarks/bench_run.py --table --device cuda:0 --preset seed
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))


def bare(archive: str, batch: int, tokens: int, warmup: int, repeats: int, device: str) -> None:
    import torch

    from inspector.jobs import load
    from inspector.jobs.timed_generation import END, PAD, START

    _, programs = load.load(archive, programs=["encoder", "decoder"])
    dev = torch.device(device)
    enc = programs["encoder"].module().to(dev)
    dec = programs["decoder"].module().to(dev)
    pixels = torch.randn((batch, 3, 224, 224), generator=torch.Generator().manual_seed(0)).to(dev)
    sync = torch.cuda.synchronize if dev.type == "cuda" else (lambda: None)
    totals = []
    with torch.no_grad():
        for i in range(warmup + repeats):
            sync()
            t0 = time.perf_counter()
            hidden = enc(pixels).last_hidden_state
            ids = torch.full((batch, 1), START, dtype=torch.long, device=dev)
            done = torch.zeros(batch, dtype=torch.bool, device=dev)
            for _ in range(tokens):
                nxt = dec(ids, hidden)[:, -1, :].argmax(-1)
                nxt = torch.where(done, torch.full_like(nxt, PAD), nxt)
                ids = torch.cat([ids, nxt[:, None]], dim=1)
                done = done | (nxt == END)
                if bool(done.all()):
                    break
            sync()
            if i >= warmup:
                totals.append((time.perf_counter() - t0) * 1000)
    print(json.dumps({"runs_total_ms": totals, "token_ids": ids[:, 1:].tolist()}))


def calls(archive: str, tokens: int, batch: int, rounds: int) -> None:
    """Where a token's time goes, one process, interleaved (--calls): the exported
    decoder through module() (torch's per-call input checks), the same module with the
    checks off (what the run job times after its first, checked generation), and the
    eager toy rebuilt from the archive, each called on the sequence lengths of a
    generation; then the run job's own per-token p50 against a bare greedy loop."""
    import torch

    from inspector.jobs import load, toy
    from inspector.jobs.runner import run_job
    from inspector.core.timing_spread import percentile

    vetted = load.vet(archive, programs=["encoder", "decoder"])
    programs = load.load_programs(vetted)
    checked = programs["decoder"].module()
    unchecked = programs["decoder"].module()
    unchecked.validate_inputs = False
    model = toy.model_from_config(toy.config_from_json(vetted.info["toy_config"]), seed=None)
    eager = toy.DecoderWrapper(model)
    weights = load.load_state_dicts(vetted)
    eager.load_state_dict(weights["decoder"], strict=False)
    model.encoder.load_state_dict(weights["encoder"], strict=False)
    g = torch.Generator().manual_seed(0)
    with torch.no_grad():
        hidden = model.encoder(pixel_values=torch.randn((batch, 3, 224, 224), generator=g)
                               ).last_hidden_state
        ways = {"module() (torch's input checks)": checked, "module(), checks off": unchecked,
                "eager toy": eager}
        times: dict[str, list[float]] = {k: [] for k in ways}
        for r in range(rounds + 1):  # round 0 warms up
            for n in range(1, tokens + 1):
                ids = torch.ones((batch, n), dtype=torch.long)
                for name, f in ways.items():
                    t0 = time.perf_counter()
                    f(ids, hidden)
                    if r:
                        times[name].append((time.perf_counter() - t0) * 1000)
    print(f"decoder calls, batch {batch}, sequence lengths 1..{tokens}, {rounds} rounds "
          f"interleaved, {torch.get_num_threads()} thread(s)")
    base = percentile(times["eager toy"], 50)
    for name, xs in times.items():
        p50 = percentile(xs, 50)
        print(f"  {name:<34} p50 {p50:7.3f} ms  IQR {percentile(xs, 25):.3f}-"
              f"{percentile(xs, 75):.3f}  {p50 / base:.2f}x eager")
    bare_p50, job_p50 = [], {}
    for mode in ("export", "eager"):
        r = run_job("run", [archive, "--mode", mode, "--batch", str(batch), "--max-tokens",
                            str(tokens), "--warmup", "1", "--repeats", str(rounds)])
        job_p50[mode] = r["p50_ms"]
    with torch.no_grad():
        for _ in range(rounds):
            ids = torch.full((batch, 1), 1, dtype=torch.long)
            for _ in range(tokens):
                t0 = time.perf_counter()
                nxt = unchecked(ids, hidden)[:, -1, :].argmax(-1)
                ids = torch.cat([ids, nxt[:, None]], dim=1)
                bool((nxt == 2).all())
                bare_p50.append((time.perf_counter() - t0) * 1000)
    bp = percentile(bare_p50, 50)
    print(f"  bare greedy loop, checks off       p50 {bp:7.3f} ms per token")
    print(f"  run job, export                    p50 {job_p50['export']:7.3f} ms per token "
          f"({job_p50['export'] / bp:.2f}x the bare loop: the job's own per-token work)")
    print(f"  run job, eager                     p50 {job_p50['eager']:7.3f} ms per token "
          f"(export/eager {job_p50['export'] / job_p50['eager']:.2f}x)")


def _export_tiny(path: Path) -> None:
    from inspector.jobs.runner import run_job

    run_job("export", ["--preset", "tiny", "--batch", "1:16", "--seq-len", "2:128",
                       "-o", str(path)])


def table(args: argparse.Namespace) -> int:
    from inspector.jobs.runner import JobError, run_job

    archive = Path(args.archive) if args.archive else Path.home() / ".cache" / \
        "pt2-inspector-bench" / f"{args.preset}-{args.device.replace(':', '')}.pt2"
    if not archive.exists():
        archive.parent.mkdir(parents=True, exist_ok=True)
        run_job("export", ["--preset", args.preset, "--device", args.device, "-o", str(archive)])
    print(f"{args.device}, {args.preset} archive, batch {args.batch}, {args.tokens} tokens, "
          f"warm-up {args.warmup}, {args.repeats} timed generations")
    print(f"{'mode':<8}{'compile':<9}{'precision':<10}{'p50 ms':>9}{'p90 ms':>9}"
          f"{'enc ms':>9}{'total ms':>10}{'tok/s':>9}")
    failed = 0
    for precision in ("fp32", "bf16"):
        for mode in ("eager", "export"):
            for comp in (False, True):
                argv = [str(archive), "--device", args.device, "--mode", mode, "--precision",
                        precision, "--batch", str(args.batch), "--max-tokens", str(args.tokens),
                        "--warmup", str(max(args.warmup, 2 if comp else 0)),
                        "--repeats", str(args.repeats)] + (["--compile"] if comp else [])
                try:
                    r = run_job("run", argv)
                except JobError as exc:
                    print(f"{mode:<8}{str(comp):<9}{precision:<10} failed: {exc}")
                    failed += 1
                    continue
                print(f"{mode:<8}{str(comp):<9}{precision:<10}{r['p50_ms']:9.2f}{r['p90_ms']:9.2f}"
                      f"{r['encoder_ms']:9.2f}{r['total_ms']:10.1f}{r['tokens_per_s']:9.1f}")
    if failed:
        print(f"MISS: {failed} of 8 configurations failed")
    return 1 if failed else 0


def cancel_latency(archive: Path, device: str) -> float:
    """Seconds from SIGTERM to the run child's exit, mid-generation; the child must
    end through its handler (exit 130), not the SIGKILL after the grace period."""
    from inspector.jobs.__main__ import EXIT_CANCELLED
    from inspector.jobs.runner import Job

    child = Job("run", [str(archive), "--device", device, "--max-tokens", "64",
                        "--repeats", "50", "--warmup", "0"])
    for event in child.events():
        if event["event"] == "error":
            raise SystemExit(f"the run failed before its first sample: {event['message']}")
        if event["event"] == "sample":
            break
    else:
        raise SystemExit("the run ended without a sample")
    t0 = time.perf_counter()
    code = child.cancel()
    elapsed = time.perf_counter() - t0
    if code != EXIT_CANCELLED:
        raise SystemExit(f"cancel mid-run: exit {code}, not {EXIT_CANCELLED}")
    return elapsed


def compare_load(archive: Path, rounds: int) -> None:
    """Fresh processes: our vetted load (jobs/load.py) vs torch's own load_pt2."""
    sys.path.insert(0, str(Path(__file__).parent))
    from common import measure

    ours = [sys.executable, "-c", "import sys; sys.path.insert(0, sys.argv[2]); "
            "from inspector.jobs import load; load.load(sys.argv[1])", str(archive), str(ROOT)]
    theirs = [sys.executable, "-c", "import sys, torch, transformers.modeling_outputs; "
              "from torch.export.pt2_archive._package import load_pt2; load_pt2(sys.argv[1])",
              str(archive)]
    o, t = [], []
    for _ in range(rounds):
        o.append(measure(ours))
        t.append(measure(theirs))
    ow, tw = statistics.median(m.wall_s for m in o), statistics.median(m.wall_s for m in t)
    orss = statistics.median(m.peak_rss_mb for m in o)
    trss = statistics.median(m.peak_rss_mb for m in t)
    print(f"  load, whole process: vetted {ow:.2f} s / {orss:.0f} MB, torch load_pt2 "
          f"{tw:.2f} s / {trss:.0f} MB, ratio {ow / tw:.3f}x")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--compare-load", action="store_true",
                        help="also time the vetted load against torch's load_pt2")
    parser.add_argument("--table", action="store_true",
                        help="eager/export x compile x fp32/bf16 through the job on --device")
    parser.add_argument("--preset", choices=("tiny", "seed"), default="tiny",
                        help="for --table: which archive to export on the device")
    parser.add_argument("archive", nargs="?")
    parser.add_argument("--batch", type=int, default=2)
    parser.add_argument("--tokens", type=int, default=64)
    parser.add_argument("--warmup", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=5, help="generations per process")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved process pairs")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--bare", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--calls", action="store_true",
                        help="where a token's time goes: decoder calls with and without "
                             "torch's input checks, eager, the job against a bare loop")
    args = parser.parse_args()
    if args.calls:
        archive = args.archive or str(ROOT / "resources" / "demo" / "toy-tiny.pt2")
        calls(archive, args.tokens, args.batch, args.rounds)
        return 0
    if args.bare:
        bare(args.archive, args.batch, args.tokens, args.warmup, args.repeats, args.device)
        return 0
    if args.table:
        return table(args)

    from inspector.jobs.runner import child_env, run_job

    archive = Path(args.archive) if args.archive else Path.home() / ".cache" / \
        "pt2-inspector-bench" / "tiny-run.pt2"
    if not archive.exists():
        archive.parent.mkdir(parents=True, exist_ok=True)
        _export_tiny(archive)
    common = ["--batch", str(args.batch), "--warmup", str(args.warmup),
              "--repeats", str(args.repeats), "--device", args.device]
    bare_cmd = [sys.executable, __file__, str(archive), "--bare", "--tokens", str(args.tokens),
                *common]
    bare_gen, job_gen, bare_wall, job_wall = [], [], [], []
    same_tokens = True
    for _ in range(args.rounds):
        t0 = time.perf_counter()
        out = subprocess.run(bare_cmd, capture_output=True, text=True, env=child_env(),
                             check=True).stdout
        bare_wall.append(time.perf_counter() - t0)
        b = json.loads(out.strip().splitlines()[-1])
        bare_gen += b["runs_total_ms"]
        t0 = time.perf_counter()
        j = run_job("run", [str(archive), "--max-tokens", str(args.tokens), *common])
        job_wall.append(time.perf_counter() - t0)
        job_gen += j["runs_total_ms"]
        same_tokens &= j["token_ids"] == b["token_ids"]
    bm, jm = statistics.median(bare_gen), statistics.median(job_gen)
    print(f"{args.device}, tiny archive {archive.name}, batch {args.batch}, {args.tokens} tokens, "
          f"{args.rounds} x {args.repeats} generations each (medians)")
    print(f"  bare loop      : {bm:9.1f} ms per generation   process {statistics.median(bare_wall):6.1f} s")
    print(f"  run job        : {jm:9.1f} ms per generation   process {statistics.median(job_wall):6.1f} s")
    print(f"  ratio job/bare : {jm / bm:.3f}x per generation (target <= 1.03)")
    print(f"  same token ids : {same_tokens}")
    cancels = [cancel_latency(archive, args.device) for _ in range(2)]
    print(f"  cancel mid-run : {max(cancels) * 1000:.0f} ms worst of {len(cancels)} "
          "(target < 1000 ms)")
    if args.compare_load:
        compare_load(archive, args.rounds)
    misses = [what for what, ok in (("per-generation ratio", jm / bm <= 1.03),
                                    ("token ids differ", same_tokens),
                                    ("cancel latency", max(cancels) < 1.0)) if not ok]
    print("MISS: " + ", ".join(misses) if misses else "all targets met")
    return 1 if misses else 0


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")  # steadier on a shared 2-core machine
    raise SystemExit(main())
