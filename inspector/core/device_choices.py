"""The device choices a panel offers, from the devices job's answer (Qt-free).

The devices job (a child that imports torch) lists what torch sees; this turns its
result into (id, label) pairs, cpu always first: `cuda:0 - NVIDIA H200 (141 GB)`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class DeviceInfo:
    id: str  # what a job takes: cpu, cuda:0, mps
    label: str  # what a person reads: "cuda:0 - NVIDIA H200 (141 GB)"


CPU = DeviceInfo("cpu", "cpu")


def parse_devices(result: dict[str, Any]) -> list[DeviceInfo]:
    """The devices job's result -> choices, cpu always first."""
    out: list[DeviceInfo] = []
    for dev in result.get("devices") or []:
        if not isinstance(dev, dict) or not isinstance(dev.get("id"), str):
            continue
        label = dev["id"]
        name = dev.get("name")
        mem = dev.get("memory_bytes")
        if isinstance(name, str) and name and dev["id"] != "cpu":
            label += f" - {name}"
            if isinstance(mem, int) and mem > 0:
                label += f" ({mem / 1e9:.0f} GB)"
        out.append(DeviceInfo(dev["id"], label))
    if not any(d.id == "cpu" for d in out):
        out.insert(0, CPU)
    return out
