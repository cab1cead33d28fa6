"""Audit findings about where an archive can be loaded at all.

Two things decide that before any node runs: compiled code (an AOTInductor
package's `.so` runs only on the platform, CPU instruction sets or GPU type it
was built for, whatever the program says) and the schema the program was
written in (torch reads one schema major version: torch 2.6 and later refuse
the 7.x archives torch <= 2.5 wrote, "Serialized version ['7', '3'] does not
match our current schema version"). Pure Python: the installed torch is named
from its package metadata, never imported.
"""

from __future__ import annotations

from collections.abc import Sequence
from importlib import metadata
from typing import TYPE_CHECKING

from inspector.core.aoti import CompiledModel, compiled_models
from inspector.core.findings import ERROR, INFO, PORTABILITY, WARNING, Finding
from inspector.core.device_names import same_device

if TYPE_CHECKING:
    from inspector.core.archive import Archive
    from inspector.core.program import Device, Program

# torch's schema majors by release: 7 up to 2.5, 8 from 2.6 (measured on
# archives of 2.5.1: 7.3; 2.6.0: 8.2; 2.9.1: 8.14; 2.13/2.14: 8.20).
FIRST_RELEASE_OF_MAJOR = {7: (2, 3), 8: (2, 6)}


def installed_torch() -> str | None:
    """The torch this environment has (from its metadata: no import), or None."""
    try:
        return metadata.version("torch")
    except metadata.PackageNotFoundError:
        return None


def schema_major_of(torch_version: str | None) -> int | None:
    """The schema major a torch release reads and writes."""
    if not torch_version:
        return None
    parts = torch_version.split("+", 1)[0].split(".")
    try:
        release = (int(parts[0]), int(parts[1]))
    except (ValueError, IndexError):
        return None
    major = None
    for m, first in sorted(FIRST_RELEASE_OF_MAJOR.items()):
        if release >= first:
            major = m
    return major


def audit_loadability(archive: Archive, target: Device | None,
                      programs: Sequence[Program]) -> list[Finding]:
    findings = [_compiled(model, target) for model in compiled_models(archive)]
    current = installed_torch()
    findings += [f for p in programs if (f := _schema(p, current)) is not None]
    return findings


def _compiled(model: CompiledModel, target: Device | None) -> Finding:
    where = " ".join(x for x in (model.platform, model.machine) if x) or "its build machine"
    if model.device == "cpu" or not model.device:
        needs = f"a {where} machine"
        if model.cpu_isa:
            needs += f" whose CPU has {model.cpu_isa}"
    else:
        gpu = (f"{model.device} GPUs of compute capability {_capability(model.compute_capability)}"
               if model.compute_capability else f"{model.device} devices")
        needs = f"{gpu} on a {where} machine"
    message = (f"compiled model {model.name} is native code built for {model.target}: it "
               f"loads only on {needs}, with a torch whose C++ ABI matches the one that "
               "compiled it; no rewrite of the archive changes compiled code")
    severity = WARNING
    if target is not None and model.device:
        from inspector.core.program import Device as _Device

        built = _Device(model.device)
        if not same_device(built, _Device(target.type)):
            severity = ERROR
            message += f"; it cannot run on {target}"
        else:
            severity = INFO
    return Finding(PORTABILITY, severity, None, None, None, message, None,
                   "compile it again for the machine that runs it: "
                   "torch._inductor.aoti_compile_and_package(ep) there (or with its torch "
                   "and compiler)", "aotinductor")


def _capability(text: str) -> str:
    """`90` -> `9.0` (how NVIDIA writes it); anything else as it is."""
    return f"{text[:-1]}.{text[-1]}" if text.isdigit() and len(text) >= 2 else text


def _schema(program: Program, current: str | None) -> Finding | None:
    major, minor = program.schema_version
    newest = max(FIRST_RELEASE_OF_MAJOR)
    if major >= newest or major <= 0:
        return None  # current, or newer than known (audit.py's portability rule says so)
    first = FIRST_RELEASE_OF_MAJOR.get(major + 1, FIRST_RELEASE_OF_MAJOR[newest])
    refused_by = f"torch {first[0]}.{first[1]} and later"
    current_major = schema_major_of(current)
    if current_major is None:
        now = f"{refused_by} cannot load it"
    elif current_major != major:
        now = f"the installed torch {current} cannot load it"
    else:
        now = f"the installed torch {current} reads it, but {refused_by} do not"
    return Finding(
        PORTABILITY, WARNING if current_major != major else INFO, program.name, None, None,
        f"schema version {major}.{minor} (written by torch {program.torch_version}): torch "
        f"reads one schema major version, and {refused_by} refuse this one (\"Serialized "
        f"version ['{major}', '{minor}'] does not match our current schema version\"); {now}",
        None, f"load it with the torch that wrote it ({program.torch_version}) and save it "
              "again from a current torch, or export the model again", "schema")
