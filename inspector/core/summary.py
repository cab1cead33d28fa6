"""What `info` reports about an archive: one plain dict, shared by the CLI
(`info --json`) and the window's side tables."""

from __future__ import annotations

from typing import Any

from inspector.core.aoti import CompiledModel, compiled_models, describe_file, kernels
from inspector.core.archive import Archive
from inspector.core.program import Graph, InputSpec, Program


def format_size(nbytes: float) -> str:
    """`1.5 MB` style sizes for reports (info, audit)."""
    for unit in ("B", "KB", "MB", "GB"):
        if nbytes < 1024 or unit == "GB":
            return f"{nbytes:.0f} {unit}" if unit == "B" else f"{nbytes:.1f} {unit}"
        nbytes /= 1024
    return f"{nbytes} B"


def value_type(graph: Graph, name: str) -> str:
    """`f32[s77, 4]` for a tensor, `Sym(s77)` for a symbol, "" otherwise."""
    meta = graph.tensor_values.get(name)
    if meta is not None:
        return meta.annotation()
    for values in (graph.sym_int_values, graph.sym_float_values, graph.sym_bool_values):
        if name in values:
            return f"Sym({values[name]})"
    return ""


def _input(graph: Graph, spec: InputSpec) -> dict[str, Any]:
    if spec.constant:
        value = spec.value
        return {"name": spec.name, "type": type(value).__name__ if value is not None else "None",
                "constant": True, "value": value}
    return {"name": spec.name, "type": value_type(graph, spec.name), "constant": False}


def program_summary(program: Program) -> dict[str, Any]:
    graph = program.graph
    kinds: dict[str, int] = {}
    for spec in program.input_specs:
        kinds[spec.kind] = kinds.get(spec.kind, 0) + 1
    return {
        "name": program.name,
        "schema_version": f"{program.schema_version[0]}.{program.schema_version[1]}",
        "torch_version": program.torch_version,
        "nodes": program.node_count,
        "graphs": sum(1 for _ in program.graphs()),
        "inputs": [_input(graph, s) for s in program.forward_inputs()],
        # as torch's graph_signature.user_inputs: names, and the values of constants
        "user_inputs": [s.value if s.constant else s.name for s in program.forward_inputs()],
        "outputs": [{"name": s.name, "type": value_type(graph, s.name)} for s in program.user_outputs()],
        "input_kinds": kinds,
        "range_constraints": {sym: {"min": r.min, "max": r.max}
                              for sym, r in program.range_constraints.items()},
        "verifiers": program.verifiers,
        "opset_version": program.opset_version,
    }


def compiled_model_summary(archive: Archive, model: CompiledModel) -> dict[str, Any]:
    """An AOTInductor compiled model: what it was built for, its files, its kernels."""
    out = model.as_dict()
    out["target"] = model.target
    for entry, rec in zip(out["files"], model.files):
        entry["what"] = describe_file(rec)
    out["program"] = model.name if model.name in archive.program_names else None
    out["kernels"] = [k.as_dict() for k in kernels(archive, model)]
    return out


def archive_summary(archive: Archive) -> dict[str, Any]:
    return {
        "path": str(archive.path),
        "layout": archive.layout,
        "archive_version": archive.archive_version,
        "byteorder": archive.byteorder,
        "size": archive.path.stat().st_size,
        "programs": [program_summary(p) for p in archive.programs()],
        "compiled_models": [compiled_model_summary(archive, m) for m in compiled_models(archive)],
        "records": [r.as_dict() for r in archive.records],
    }
