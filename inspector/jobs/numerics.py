"""The numerics job: what each node computed, against a candidate run.

`python -m inspector.jobs numerics FILE --device DEV --candidate KIND [--value V]
[--program NAME] [--dim S=N] [--input NAME=AxB] [--seed N] [--threads N]
[--rtol R --atol A] [--trust]`

The reference run is the program as exported on DEV, inputs made as check/profile
make them (same seed). The candidate (jobs/numerics_candidates.py, numerics_eager.py)
is the program at bf16/fp16, on another device (or thread count), decomposed, from
another archive, or the eager toy model. Both run as torch.fx.Interpreter over the
graph the listing shows, in lockstep (jobs/lockstep.py), and each matched node's two
values are compared as they are made (jobs/numerics_compare.py), then dropped.

result: {"reference": {...}, "candidate": {...}, "torch", "programs": [{"name", "ok",
"failures", "inputs": [{"name", "shape", "dtype"}], "symbols", "nodes": [{"node",
"line", "module", "target", "candidate", "max_abs", "max_rel", "mean_abs", "cosine",
"rel_l2", "passes", "nan", "inf", "nonfinite", "rtol", "atol", "dtype", "shape",
"notes"}], "graph_inputs": [same, with "name", "kind", "target"], "outputs": [same,
with "index"], "unmatched": [node names], "first_over_tolerance", "first_nan",
"first_inf" ({"node", "line", "module", "runs", "made_by", "from_input"} or null),
"modules": [...], "most_amplifying", "failing", "compared"}]}
Floats that are not finite are written as null.
"""

from __future__ import annotations

import argparse
import math
import time
from dataclasses import dataclass
from typing import Any

from inspector.core.archive import open_archive
from inspector.core.numerics_report import (
    first_failing,
    first_nonfinite,
    module_rollup,
    most_amplifying,
)
from inspector.core.profile_report import failure_record
from inspector.jobs import numerics_candidates as candidates
from inspector.jobs.graph_run import load_for_run, target_text
from inspector.jobs.inputs import flat_arguments, user_values
from inspector.jobs.lockstep import NodeFailed, pairs, steps
from inspector.jobs.numerics_spec import NumericsSpec, add_arguments as add_spec, other_program_name
from inspector.jobs.numerics_views import ComparedValues
from inspector.jobs.protocol import Emitter
from inspector.jobs.timed_generation import check_device

PROGRESS_EVERY_S = 0.25


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_spec(parser)


def main(args: argparse.Namespace, emit: Emitter) -> int:
    spec = NumericsSpec.from_args(args)
    emit.result(**finite(run(spec, emit)))
    return 0


def finite(value: Any) -> Any:
    """The result with every non-finite float as None (JSON has no Infinity)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite(v) for v in value]
    return value


@dataclass
class Prepared:
    """Everything both runs of every program need, loaded once."""

    loaded: Any  # graph_run.Loaded
    programs: dict[str, Any]  # name -> core Program (the dtype plan, the diff's matching)
    other: dict[str, Any] | None  # --with: the other archive's programs
    device: Any
    cand_device: Any
    ref_threads: int


def prepare(torch: Any, spec: NumericsSpec, emit: Emitter) -> Prepared:
    graph = spec.graph
    device = check_device(torch, graph.device)
    cand_device = check_device(torch, spec.value) if spec.candidate == "on" else device
    if graph.threads:
        torch.set_num_threads(graph.threads)
    ref_threads = torch.get_num_threads()
    loaded = load_for_run(graph, emit, payloads="cpu", start=0.02, end=0.1)
    other = _load_other(spec, loaded.names, emit) if spec.candidate == "with" else None
    with open_archive(graph.file) as archive:
        programs = {n: archive.program(n) for n in loaded.names}
    return Prepared(loaded, programs, other, device, cand_device, ref_threads)


def run(spec: NumericsSpec, emit: Emitter) -> dict[str, Any]:
    emit.progress("import torch", 0.0)
    import torch

    prepared = prepare(torch, spec, emit)
    names = prepared.loaded.names
    results = []
    span = 0.88 / max(len(names), 1)
    for i, name in enumerate(names):
        results.append(compare_program(torch, spec, prepared, name, emit, 0.12 + i * span,
                                       span))
        prepared.loaded.programs[name] = None  # free its weights before the next program
    emit.progress("done", 1.0)
    return {
        "reference": {"kind": "reference", "archive": spec.graph.file,
                      "device": str(prepared.device), "dtype": "as exported",
                      "threads": prepared.ref_threads},
        "candidate": results[0]["candidate"] if results else {"kind": spec.candidate},
        "torch": torch.__version__,
        "programs": results,
    }


def _load_other(spec: NumericsSpec, names: list[str], emit: Emitter) -> dict[str, Any]:
    from inspector.jobs import load

    emit.progress("load the other archive", 0.1)
    with open_archive(spec.value) as archive:
        others = list(archive.program_names)
        wanted = {n: other_program_name(n, others, spec.value) for n in names}
        programs = {o: archive.program(o) for o in set(wanted.values())}
    vetted = load.vet(spec.value, trust=spec.graph.trust, programs=sorted(set(wanted.values())))
    eps = load.load_programs(vetted, payloads="cpu")
    return {"names": wanted, "programs": programs, "eps": eps}


def build_candidate(torch: Any, spec: NumericsSpec, ep: Any, name: str, program: Any,
                    plan: Any, users: dict[str, Any], ref_args: list[Any], other: Any,
                    device: Any, cand_device: Any, ref_threads: int,
                    index: dict[str, Any]) -> candidates.Candidate:
    kind = spec.candidate
    if kind == "precision":
        return candidates.precision(torch, ep, program, users, device, spec.value)
    if kind == "on":
        return candidates.on_device(torch, ep, users, cand_device, device, ref_args,
                                    ref_threads)
    if kind == "decompose":
        return candidates.decompose(torch, ep, users, device, name)
    if kind == "with":
        other_name = other["names"][name]
        return candidates.with_archive(torch, other["eps"][other_name],
                                       other["programs"][other_name], program, users,
                                       plan.inputs, device, spec.value, other_name)
    from inspector.jobs.numerics_eager import eager_candidate

    return eager_candidate(torch, spec.graph.file, ep, name, users, plan, device, index)


@dataclass
class Built:
    """One program's two runs, ready: the reference's arguments and the candidate."""

    ep: Any
    ref_args: list[Any]
    cand: candidates.Candidate


def make_candidate(torch: Any, spec: NumericsSpec, prepared: Prepared, name: str) -> Built:
    loaded, device = prepared.loaded, prepared.device
    ep = loaded.programs[name]
    plan = loaded.plans[name]
    users = user_values(torch, plan, device, spec.graph.seed)
    ref_args = flat_arguments(ep, users, lambda kind, target, v: v.to(device)
                              if isinstance(v, torch.Tensor) else v)
    cand = build_candidate(torch, spec, ep, name, prepared.programs[name], plan, users,
                           ref_args, prepared.other, device, prepared.cand_device,
                           prepared.ref_threads, loaded.indexes[name])
    return Built(ep, ref_args, cand)


def compare_program(torch: Any, spec: NumericsSpec, prepared: Prepared, name: str,
                    emit: Emitter, start: float = 0.0, span: float = 1.0,
                    observe: Any = None, built: Built | None = None) -> dict[str, Any]:
    """Both runs of one program in lockstep; `observe(ref node, ref value, cand name,
    cand value)` sees every pair (the tests compare them with torch's own runs)."""
    from inspector.jobs.numerics_compare import compare

    loaded, device, ref_threads = prepared.loaded, prepared.device, prepared.ref_threads
    plan = loaded.plans[name]
    index = loaded.indexes[name]
    emit.progress(f"{name}: build the candidate", start)
    built = built if built is not None else make_candidate(torch, spec, prepared, name)
    ep, ref_args, cand = built.ep, built.ref_args, built.cand
    gm = ep.graph_module
    if cand.gm is not None:
        cand.match.setdefault(_output_node(gm).name, _output_node(cand.gm).name)
    record: dict[str, Any] = {"name": name, "ok": True, "failures": [],
                              "inputs": [i.describe() for i in plan.inputs],
                              "symbols": plan.symbols}
    kinds = {s.arg.name: (s.kind.name.lower(), s.target)
             for s in ep.graph_signature.input_specs if hasattr(s.arg, "name")}
    uses = {n.name: [a.name for a in n.all_input_nodes] for n in gm.graph.nodes
            if n.op not in ("placeholder", "output")}
    outputs = [a.name for a in _output_nodes(gm)]
    nodes: list[dict[str, Any]] = []
    graph_inputs: list[dict[str, Any]] = []
    out_records: list[dict[str, Any]] = []
    unmatched: list[str] = []
    errors: dict[str, float | None] = {}
    total = max(1, sum(1 for _ in gm.graph.nodes))
    rtol, atol = spec.rtol, spec.atol
    compare_on = cand.device if cand.device.type != "cpu" else device

    ref_before = cand_before = None
    measure = compare
    if cand.threads:
        def ref_before() -> None:
            torch.set_num_threads(ref_threads)

        def cand_before() -> None:
            torch.set_num_threads(cand.threads)

        def measure(*args: Any) -> Any:
            # the metrics in the reference's thread count, not the candidate's the
            # last step left: on a busy 2-core machine every one of their ~15 ops
            # waited ~5 ms for a second OpenMP thread (GPT-2 25M: 35 s, 50x)
            ref_before()
            return compare(*args)

    views = ComparedValues(torch)

    def measure_once(r: Any, c: Any) -> Any:
        # a view over the elements of a pair already compared has its numbers
        got = views.lookup(r, c)
        if got is None:
            got = measure(torch, r, c, rtol, atol, compare_on)
            if got is not None:
                views.remember(r, c, got)
        return got

    last = time.monotonic()
    done = 0
    try:
        with torch.no_grad():
            ref_steps = steps(torch, gm, ref_args, "reference", ref_before)
            cand_steps = cand.steps if cand.steps is not None else steps(
                torch, cand.gm, cand.args, "candidate", cand_before)
            for rnode, rvalue, cname, cvalue in pairs(ref_steps, cand_steps, cand.match):
                done += 1
                if observe is not None:
                    observe(rnode, rvalue, cname, cvalue)
                if rnode.op == "output":
                    if cname is not None:
                        for k, (r, c) in enumerate(zip(rvalue, cvalue)):
                            got = measure_once(r, c)
                            if got is not None:
                                out_records.append({"index": k, **got.record()})
                    continue
                if cname is None:
                    if rnode.op != "placeholder" and rvalue is not None:
                        unmatched.append(rnode.name)
                    continue
                got = measure_once(rvalue, cvalue)
                rvalue = cvalue = None
                if got is None:
                    continue
                rec = got.record()
                errors[rnode.name] = rec["rel_l2"]
                if rnode.op == "placeholder":
                    kind, target = kinds.get(rnode.name, ("user_input", None))
                    graph_inputs.append({"name": rnode.name, "kind": kind, "target": target,
                                         **rec})
                    continue
                info = index.get(rnode.name)
                nodes.append({"node": rnode.name, "line": info.line if info else None,
                              "module": info.module if info else "",
                              "target": info.target if info else target_text(rnode),
                              "candidate": cname, "source": _source(info), **rec})
                now = time.monotonic()
                if now - last > PROGRESS_EVERY_S:
                    last = now
                    emit.progress(f"{name}: node {done}/{total}", start + span * done / total)
    except NodeFailed as failed:
        exc = failed.exc
        message = f"{failed.run} run: " + (str(exc).strip() or type(exc).__name__)
        record["ok"] = False
        record["failures"] = [failure_record(failed.node.name, index, message,
                                             target_text(failed.node))]
    except torch.OutOfMemoryError:
        from inspector.jobs.timed_generation import RunError

        raise RunError(f"out of memory on {device} while comparing {name} "
                       f"(inputs {plan.symbols}; try smaller --dim values)") from None
    uses_all = dict(uses)
    modules = module_rollup(nodes, index, uses_all, errors, outputs)
    record.update(
        nodes=nodes, graph_inputs=graph_inputs, outputs=out_records, unmatched=unmatched,
        compared=len(nodes), failing=sum(1 for n in nodes if not n["passes"]),
        first_over_tolerance=first_failing(nodes),
        first_nan=first_nonfinite(nodes, graph_inputs, uses_all, "nan"),
        first_inf=first_nonfinite(nodes, graph_inputs, uses_all, "inf"),
        modules=modules, most_amplifying=most_amplifying(modules),
        notes=cand.notes, candidate=cand.description)
    return record


def _source(info: Any) -> dict[str, Any] | None:
    """The innermost frame of a node's stack trace (the listing's `# File:` line)."""
    if info is None or not info.frames:
        return None
    f = info.frames[-1]
    return {"file": f.file, "line": f.line, "function": f.function, "code": f.code}


def _output_node(gm: Any) -> Any:
    return next(n for n in gm.graph.nodes if n.op == "output")


def _output_nodes(gm: Any) -> list[Any]:
    return list(_output_node(gm).all_input_nodes)
