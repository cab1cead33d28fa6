"""Device strings a user types (`cuda`, `cuda:1`, `meta`) checked without torch.

The audit compares baked-in device literals with a target device and retarget
writes one into an archive, so a typo (`cuda1`, `gpu`) must be refused with a
message naming what is accepted, not written into a file torch later rejects.
"""

from __future__ import annotations

import re

from inspector.core.errors import InspectorError
from inspector.core.program import Device

# torch's DeviceType names (c10/core/DeviceType.cpp) that a program can carry.
DEVICE_TYPES = (
    "cpu", "cuda", "mps", "meta", "xpu", "hip", "hpu", "xla", "mtia", "maia", "ipu",
    "lazy", "vulkan", "ve", "fpga", "privateuseone", "mkldnn", "opengl", "opencl", "ideep",
)
# fullmatch, ASCII digits: `$` would accept "cpu\n", `\d` Arabic-Indic digits.
_DEVICE = re.compile(r"([a-z_]+)(?::([0-9]{1,6}))?")


class DeviceNameError(InspectorError):
    """A device string that torch would not accept."""


def parse_device(text: str) -> Device:
    """`cuda:1` -> Device('cuda', 1); raise DeviceNameError on anything torch refuses."""
    raw = text
    # Spaces around are a typo we forgive; a newline or other control is refused
    # ("cpu\n" would otherwise carry into torch and split its error over two lines).
    text = text.strip(" ").lower()
    m = _DEVICE.fullmatch(text)
    if not m:
        raise DeviceNameError(
            f"device {raw!r} is not a device name (expected TYPE or TYPE:INDEX, "
            "e.g. cpu, cuda, cuda:1, mps, meta, xpu:0)")
    kind, index = m.group(1), m.group(2)
    if kind not in DEVICE_TYPES:
        hint = " (did you mean cuda?)" if kind in ("gpu", "nvidia", "rocm") else ""
        raise DeviceNameError(
            f"device {raw!r} has an unknown type {kind!r}{hint} "
            f"(known: {', '.join(DEVICE_TYPES[:6])}, ...)")
    if kind in ("cpu", "meta") and index not in (None, "0"):
        raise DeviceNameError(f"device {raw!r}: {kind} has no device index (use {kind!r})")
    return Device(kind, int(index) if index is not None else None)


def same_device(a: Device, b: Device) -> bool:
    """Whether a literal `a` already matches target `b`. A target without index
    (`cuda`) accepts any index: torch's current device decides at run time."""
    if a.type != b.type:
        return False
    return b.index is None or a.index is None and b.index == 0 or a.index == b.index
