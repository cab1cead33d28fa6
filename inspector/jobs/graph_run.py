"""What the check and profile jobs share: loading the programs through the vetted
loader, planning their inputs, and joining torch's FX nodes to the listing.

Both jobs run `ep.graph_module` (the graph the listing shows) node by node with an
FX Interpreter, so every report speaks of torch's node names, which are the
listing's names (inspector/core/node_index.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

from inspector.core.archive import open_archive
from inspector.core.inputs import InputPlan, plan_programs
from inspector.core.node_index import NodeInfo, node_index
from inspector.jobs.graph_spec import GraphRunSpec
from inspector.jobs.protocol import Emitter

UNTIMED_OPS = ("placeholder", "output")


@dataclass
class Loaded:
    names: list[str]
    plans: dict[str, InputPlan]
    programs: dict[str, Any]  # name -> ExportedProgram
    indexes: dict[str, dict[str, NodeInfo]]


def vet_for_run(spec: GraphRunSpec, emit: Emitter) -> Any:
    """Vet the archive (core/vetting.py) before torch is imported: a refusal (records
    that run code without --trust, a name or operator off the allow-list, over the
    node limit, a deflate bomb) costs no torch import and no graph."""
    from inspector.core.vetting import vet

    names = list(spec.programs)
    if not names:
        with open_archive(spec.file) as archive:
            names = list(archive.program_names)
    emit.progress("vet archive", 0.0)
    vetted = vet(spec.file, trust=spec.trust, programs=names)
    if vetted.trusted:
        emit.log(f"loading {len(vetted.trusted)} record(s) that run code, as trusted: "
                 + ", ".join(vetted.trusted[:5]), "warning")
    return vetted


def load_for_run(spec: GraphRunSpec, emit: Emitter, payloads: str, start: float = 0.0,
                 end: float = 0.2, vetted: Any = None) -> Loaded:
    """Plan the inputs from the vetted JSON (vetting first, unless `vetted` is given:
    see vet_for_run), load with torch, and index the listing of each program."""
    from inspector.jobs import load

    if vetted is None:
        vetted = vet_for_run(spec, emit)
    names = list(vetted.program_names)
    docs = {n: orjson.loads(vetted.program_bytes[n]) for n in names}
    plans = plan_programs(docs, spec.dim_values, spec.shape_values)
    del docs
    emit.progress("load programs", start + (end - start) * 0.3)
    programs = load.load_programs(vetted, payloads=payloads)
    emit.progress("index listing", start + (end - start) * 0.9)
    with open_archive(spec.file) as archive:
        indexes = {n: node_index(archive.program(n)) for n in names}
    return Loaded(names, plans, programs, indexes)


def target_text(node: Any) -> str:
    """A node's target as the listing prints it (for nodes the index lacks)."""
    from torch.fx.node import _get_qualified_name

    if node.op == "call_function":
        try:
            return _get_qualified_name(node.target)
        except Exception:  # noqa: BLE001 - a callable without a qualified name
            return str(node.target)
    return node.op if node.op == "get_attr" else str(node.target)


def timed_nodes(graph: Any) -> list[Any]:
    return [n for n in graph.nodes if n.op not in UNTIMED_OPS]


def first_line(text: str, limit: int = 400) -> str:
    line = (text.strip().splitlines() or [""])[0]
    return line[:limit]
