"""Torch values for a planned call (see inspector/core/inputs.py for the plan), and the
flat argument list an exported program's graph module takes.

The graph module of an ExportedProgram takes every placeholder in signature order:
parameters, buffers, constants, then the user inputs (and constant inputs, as their
recorded values). Calling it directly, rather than `ep.module()`, runs exactly the
graph the listing shows, with its node names, and skips the pytree and guard layers
(our plan already keeps the dims inside the program's ranges).
"""

from __future__ import annotations

from typing import Any

from inspector.core.errors import InspectorError
from inspector.core.inputs import TENSOR, InputPlan, PlannedInput


class UnsupportedProgramError(InspectorError):
    """A program whose inputs this job cannot make (effect tokens, ...)."""


def torch_dtype(torch: Any, plan_input: PlannedInput) -> Any:
    return getattr(torch, plan_input.dtype_name)


def make_value(torch: Any, item: PlannedInput, device: Any, generator: Any | None,
               fake: bool = False) -> Any:
    """One user input: zeros for integer tensors, ones for bool, seeded random floats
    (drawn on the CPU so a seed gives the same numbers on every device); inside a
    FakeTensorMode (`fake`) an empty tensor made on the device by a factory, since a
    fake CPU tensor cannot be moved to a device this torch was not built for."""
    if item.kind != TENSOR:
        return item.value
    dtype = torch_dtype(torch, item)
    if fake:
        return torch.empty(item.shape, dtype=dtype, device=device)
    if item.fill == "zeros":
        return torch.zeros(item.shape, dtype=dtype, device=device)
    if item.fill == "ones":
        return torch.ones(item.shape, dtype=dtype, device=device)
    if dtype.is_complex:
        base = torch.randn(item.shape, dtype=torch.complex64, generator=generator)
    else:
        base = torch.randn(item.shape, dtype=torch.float32, generator=generator)
    return base.to(dtype=dtype).to(device)


def user_values(torch: Any, plan: InputPlan, device: Any, seed: int = 0,
                fake: bool = False) -> dict[str, Any]:
    generator = torch.Generator().manual_seed(seed)
    return {i.name: make_value(torch, i, device, generator, fake) for i in plan.inputs}


def flat_arguments(ep: Any, users: dict[str, Any], state: Any) -> list[Any]:
    """The graph module's arguments in placeholder order. `state(kind, target, value)`
    turns a parameter/buffer/constant into what this run wants (moved to the device,
    or a fake tensor made like it)."""
    out: list[Any] = []
    for spec in ep.graph_signature.input_specs:
        kind = spec.kind.name
        if kind == "USER_INPUT":
            name = getattr(spec.arg, "name", None)
            if name in users:
                out.append(users[name])
            elif hasattr(spec.arg, "value"):  # a constant input: its recorded value
                out.append(spec.arg.value)
            else:
                raise UnsupportedProgramError(f"input {name!r} of the program has no planned value")
        elif kind in ("PARAMETER", "BUFFER", "CONSTANT_TENSOR", "CUSTOM_OBJ"):
            target = spec.target
            if target in ep.state_dict:
                value = ep.state_dict[target]
            elif target in ep.constants:
                value = ep.constants[target]
            else:
                raise UnsupportedProgramError(f"{kind.lower()} {target!r} is not in the archive")
            out.append(state(kind, target, value))
        else:
            raise UnsupportedProgramError(
                f"the program takes a {kind.lower()} input ({spec.arg}), which check and "
                "profile cannot provide yet")
    return out
