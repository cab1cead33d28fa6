"""The devices job: what torch sees, listed in a child so the window never imports torch.

`python -m inspector.jobs devices` -> one result event:
  {"devices": [{"id": "cpu", "kind": "cpu", "name": ..., "memory_bytes": ...},
               {"id": "cuda:0", "kind": "cuda", "name": "NVIDIA H200",
                "memory_bytes": ..., "capability": "9.0"}, ...],
   "torch": "2.13.0+cpu", "cuda": null}
"""

from __future__ import annotations

import argparse
import os
import platform
from typing import Any

from inspector.jobs.protocol import Emitter


def add_arguments(parser: argparse.ArgumentParser) -> None:
    pass


def main(args: argparse.Namespace, emit: Emitter) -> int:
    emit.progress("import torch", 0.0)
    import torch

    emit.result(devices=available(torch), torch=torch.__version__,
                cuda=getattr(torch.version, "cuda", None))
    return 0


def _cpu_name() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as fp:
            for line in fp:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "cpu"


def _ram_bytes() -> int | None:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None


_CACHE: list[dict[str, Any]] | None = None


def available(torch: Any) -> list[dict[str, Any]]:
    global _CACHE
    if _CACHE is not None:
        return _CACHE
    devices: list[dict[str, Any]] = [{
        "id": "cpu", "kind": "cpu", "name": _cpu_name(), "memory_bytes": _ram_bytes(),
        "threads": torch.get_num_threads(),
    }]
    if torch.cuda.is_available():
        for i in range(torch.cuda.device_count()):
            p = torch.cuda.get_device_properties(i)
            devices.append({
                "id": f"cuda:{i}", "kind": "cuda", "name": p.name,
                "memory_bytes": int(p.total_memory), "capability": f"{p.major}.{p.minor}",
            })
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        devices.append({"id": "mps", "kind": "mps", "name": "Apple GPU (MPS)",
                        "memory_bytes": None})
    _CACHE = devices
    return devices
