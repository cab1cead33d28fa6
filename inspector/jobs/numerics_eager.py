"""The `--eager` candidate: the toy model this project ships, rebuilt from the
archive's config with the program's own weights, compared at module boundaries.

An exported node has no eager twin, but a module has: `nn_module_stack` names the
module each node belongs to, so a module's output node is the last node of the
module (in program order) that a node outside it uses (or the graph returns). The
eager model runs once with a forward hook on every submodule, keeping only the
first tensor each module returns (a module's outputs, not every intermediate: the
toy is small, and only the toy is accepted); those values are then handed to the
lockstep in the reference's order, as if a candidate run had made them.
"""

from __future__ import annotations

import types
from typing import Any

from inspector.core.archive import open_archive
from inspector.jobs.graph_spec import GraphRunSpecError
from inspector.jobs.numerics_candidates import Candidate

TOY_PROGRAMS = ("encoder", "decoder")


def _toy_info(path: str) -> dict[str, Any]:
    import orjson

    from inspector.jobs.load import EXTRA_RECORD

    with open_archive(path) as archive:
        if EXTRA_RECORD not in archive.extra_names():
            return {}
        try:
            info = orjson.loads(archive.read_extra(EXTRA_RECORD))
        except orjson.JSONDecodeError:
            return {}
    return info if isinstance(info, dict) else {}


def check_toy(path: str, names: list[str]) -> None:
    """--eager needs an archive `pt2-inspector export` wrote (its toy config)."""
    if "toy_config" not in _toy_info(path):
        raise GraphRunSpecError(f"--eager compares with the toy model rebuilt from the "
                                f"archive's config, and {path} has none (only archives "
                                "written by `pt2-inspector export` have it)")
    unknown = [n for n in names if n not in TOY_PROGRAMS]
    if unknown:
        raise GraphRunSpecError(f"--eager knows the toy's encoder and decoder, not "
                                f"{', '.join(unknown)}")


def module_outputs(gm: Any, index: dict[str, Any]) -> dict[str, str]:
    """module path -> the name of its output node (see the module docstring)."""
    order = {n.name: i for i, n in enumerate(gm.graph.nodes)}
    paths: dict[str, set[str]] = {}
    for node in gm.graph.nodes:
        info = index.get(node.name)
        if info is None:
            continue
        for entry in info.modules:
            paths.setdefault(entry.path, set()).add(node.name)
    nodes = {n.name: n for n in gm.graph.nodes}
    out: dict[str, str] = {}
    for path, members in paths.items():
        leaving = [m for m in members if any(u.name not in members for u in nodes[m].users)]
        tensors = [m for m in leaving if _is_tensor(nodes[m])]
        if tensors:
            out[path] = max(tensors, key=order.__getitem__)
    return out


def _is_tensor(node: Any) -> bool:
    val = node.meta.get("val")
    return val is not None and hasattr(val, "shape") and hasattr(val, "dtype")


def _first_tensor(torch: Any, value: Any) -> Any:
    leaves = torch.utils._pytree.tree_leaves(value)
    return next((v for v in leaves if isinstance(v, torch.Tensor)), None)


def eager_candidate(torch: Any, path: str, ep: Any, name: str, users: dict[str, Any],
                    plan: Any, device: Any, index: dict[str, Any]) -> Candidate:
    from inspector.jobs import toy

    info = _toy_info(path)
    try:
        config = toy.config_from_json(info["toy_config"])
    except (ValueError, TypeError, KeyError) as exc:
        raise GraphRunSpecError(f"the archive's toy config cannot be used ({exc})") from None
    model = toy.model_from_config(config, seed=None)
    positions = len(plan.inputs) == 3
    root = model.encoder if name == "encoder" else toy.DecoderWrapper(model, positions)
    state = {**ep.state_dict, **{k: v for k, v in ep.constants.items()
                                 if isinstance(v, torch.Tensor)}}
    result = root.load_state_dict(state, strict=False)
    missing = [k for k in result.missing_keys if k in dict(root.named_parameters())]
    if missing:
        raise GraphRunSpecError(f"the archive's {name} weights do not fit the toy model "
                                f"rebuilt from its config (missing {', '.join(missing[:5])})")
    root.to(device).eval()
    outputs = module_outputs(ep.graph_module, index)
    captured: dict[str, Any] = {}
    hooks = []
    for mpath, module in root.named_modules():
        if mpath in outputs:
            def hook(_m: Any, _args: Any, out: Any, mpath: str = mpath) -> None:
                captured[mpath] = _first_tensor(torch, out)
            hooks.append(module.register_forward_hook(hook))
    args = [users[i.name] for i in plan.inputs]
    args = [a.to(device) if isinstance(a, torch.Tensor) else a for a in args]
    with torch.no_grad():
        final = root(*args)
    for h in hooks:
        h.remove()
    final_tensor = final if isinstance(final, torch.Tensor) else _first_tensor(torch, final)
    order = {n.name: i for i, n in enumerate(ep.graph_module.graph.nodes)}
    by_node = sorted(((node, captured[mpath]) for mpath, node in outputs.items()
                      if captured.get(mpath) is not None), key=lambda p: order[p[0]])
    seen: dict[str, Any] = {}
    for node, value in by_node:
        seen.setdefault(node, value)  # nested modules that end at one node: the innermost
    out_node = next(n for n in ep.graph_module.graph.nodes if n.op == "output")
    made = [(types.SimpleNamespace(name=n, op="call_module"), v) for n, v in seen.items()]
    made.append((types.SimpleNamespace(name=out_node.name, op="output"), (final_tensor,)))
    match = {n: n for n in seen}
    match[out_node.name] = out_node.name
    return Candidate(None, [], device, match, {
        "kind": "eager", "device": str(device), "modules": len(seen)}, steps=iter(made))
