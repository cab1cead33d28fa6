"""The one way tests make their own small archives: real torch exports, cached.

Tests get it as the session fixture `archive_factory` (tests/conftest.py); helper
modules that build archives outside a fixture (audit_models.py, diff_models.py, a
child process) make one over a folder. An archive is keyed by its name: a second
ask for the same name returns the file already there, so one session exports each
model once, whichever test asks first. A file is complete or absent (written
under its name in a staging folder, then moved), and torch's warnings about tiny models
(views without complete tensors, empty lists) are kept out of the test output.
"""

from __future__ import annotations

import tempfile
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any


class ArchiveFactory:
    def __init__(self, root: Path) -> None:
        self.root = root

    def path(self, name: str) -> Path:
        """Where the archive called `name` lives (`ops/cat` -> `ops__cat.pt2`)."""
        return self.root / (name.replace("/", "__") + ".pt2")

    def build(self, name: str, write: Callable[[Path], object]) -> Path:
        """The archive `write(path)` writes (any way: save, package_pt2, a rewrite
        of another archive), made once."""
        path = self.path(name)
        if not path.exists():
            self.root.mkdir(parents=True, exist_ok=True)
            # The temporary file keeps the final name, in a folder of its own:
            # torch names an archive's top folder after the file's stem.
            staging = Path(tempfile.mkdtemp(prefix=".staging-", dir=self.root))
            tmp = staging / path.name
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                write(tmp)
            tmp.replace(path)
            staging.rmdir()
        return path

    def save(self, name: str, program: Any) -> Path:
        """An ExportedProgram saved with torch.export.save; a dict of them packaged
        into one multi-program archive (package_pt2); a callable returning either
        is only called when the archive is not made yet."""
        def write(path: Path) -> None:
            import torch

            ep = program
            if not isinstance(ep, (torch.export.ExportedProgram, dict)):
                ep = ep()
            if isinstance(ep, dict):
                from torch.export.pt2_archive._package import package_pt2
                package_pt2(str(path), exported_programs=ep)
            else:
                torch.export.save(ep, str(path))
        return self.build(name, write)

    def export(self, name: str, module: Any, args: tuple, kwargs: dict[str, Any] | None = None,
               *, dynamic_shapes: Any = None, strict: bool = False) -> Path:
        """torch.export.export(module, args, kwargs, ...) saved as `name`."""
        def program() -> Any:
            import torch

            return torch.export.export(module, args, kwargs, dynamic_shapes=dynamic_shapes,
                                       strict=strict)
        return self.save(name, program)
