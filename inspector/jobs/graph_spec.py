"""What to check or profile: `GraphRunSpec`, checked before any torch work starts.

Pure Python (no torch import), like spec.py: the CLI validates a spec and plans the
inputs (inspector/core/inputs.py, from the archive's JSON) before it starts a child,
so a typo is one `error:` line in milliseconds; the child (jobs/check.py,
jobs/profile.py) parses the same arguments back and plans again from the bytes it
vetted.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass

from inspector.core.archive import open_archive
from inspector.core.device_names import parse_device
from inspector.core.errors import InspectorError
from inspector.core.inputs import InputPlan, parse_dims, parse_shapes, plan_programs

PRECISIONS = ("fp32", "bf16")


class GraphRunSpecError(InspectorError):
    pass


@dataclass(frozen=True)
class GraphRunSpec:
    file: str
    device: str = "cpu"
    programs: tuple[str, ...] = ()  # () = every program
    dims: tuple[str, ...] = ()  # "s70=16"
    inputs: tuple[str, ...] = ()  # "input_ids=2x16"
    seed: int = 0
    trust: bool = False
    # profile only
    warmup: int = 2
    repeats: int = 5
    precision: str = "fp32"
    threads: int = 1  # CPU threads for torch (0: torch's own choice); spec.DEFAULT_THREADS
    memory: bool = False  # also measure each node's memory (jobs/memory_measure.py)

    @property
    def dim_values(self) -> dict[str, int]:
        return parse_dims(list(self.dims))

    @property
    def shape_values(self) -> dict[str, tuple[int, ...]]:
        return parse_shapes(list(self.inputs))

    def validate(self) -> GraphRunSpec:
        parse_device(self.device)  # DeviceNameError names what is accepted
        if self.precision not in PRECISIONS:
            raise GraphRunSpecError(f"bad precision {self.precision!r} (fp32 or bf16)")
        for name, value, lo, hi in (("warm-up runs", self.warmup, 0, 1000),
                                    ("repeats", self.repeats, 1, 10000),
                                    ("seed", self.seed, 0, 2**63 - 1),
                                    ("threads", self.threads, 0, 4096)):
            if not lo <= value <= hi:
                raise GraphRunSpecError(f"{name} {value} is out of range ({lo} .. {hi})")
        self.dim_values, self.shape_values  # noqa: B018 - parse now: errors before any work
        return self

    def to_argv(self, profile: bool = False) -> list[str]:
        argv = [self.file, "--device", self.device, "--seed", str(self.seed)]
        for p in self.programs:
            argv += ["--program", p]
        for d in self.dims:
            argv += ["--dim", d]
        for i in self.inputs:
            argv += ["--input", i]
        if profile:
            argv += ["--warmup", str(self.warmup), "--repeats", str(self.repeats),
                     "--precision", self.precision, "--threads", str(self.threads)]
            if self.memory:
                argv.append("--memory")
        if self.trust:
            argv.append("--trust")
        return argv

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> GraphRunSpec:
        return cls(file=args.file, device=args.device, programs=tuple(args.program or ()),
                   dims=tuple(args.dim or ()), inputs=tuple(args.input or ()), seed=args.seed,
                   trust=args.trust, warmup=getattr(args, "warmup", 2),
                   repeats=getattr(args, "repeats", 5),
                   precision=getattr(args, "precision", "fp32"),
                   threads=getattr(args, "threads", 1),
                   memory=bool(getattr(args, "memory", False))).validate()

    def plan(self) -> tuple[list[str], dict[str, InputPlan]]:
        """(program names, their input plans) from the archive's JSON, without torch:
        unknown programs, symbols and inputs, dims out of range and shapes that do
        not fit are InputSpecError / ArchiveError here. Each program is vetted first
        (core/vetting.py's walk, the loader's allow-list): a string off it is the
        error, not whatever the planner would make of it (a `symbolic shape` holding
        code is an UnsafeProgramError naming it, not a size it cannot compute)."""
        from inspector.core.vetting import check_program

        with open_archive(self.file) as archive:
            names = list(self.programs) or list(archive.program_names)
            for name in names:
                archive.program_path(name)  # "no program named ..." with the list
            docs = {name: archive.program_json(name) for name in names}
        for name, doc in docs.items():
            check_program(name, doc)
        return names, plan_programs(docs, self.dim_values, self.shape_values)


def add_arguments(parser: argparse.ArgumentParser, profile: bool = False) -> None:
    """The options of `check`/`profile`, shared by the CLI and the child."""
    d = GraphRunSpec(file="")
    parser.add_argument("file", metavar="FILE", help=".pt2 archive")
    parser.add_argument("--device", required=True, metavar="DEV",
                        help="cpu, cuda, cuda:N, mps, ..." + (
                            " (a device this machine has)" if profile else
                            " (need not exist here: fake tensors)"))
    parser.add_argument("--program", metavar="NAME", action="append",
                        help="only this program (repeatable; default: every program)")
    parser.add_argument("--dim", metavar="SYM=N", action="append",
                        help="value of a symbolic size, e.g. s70=16 (default: the size "
                             "export traced with, inside the program's range)")
    parser.add_argument("--input", metavar="NAME=AxB", action="append",
                        help="the whole shape of a tensor input, e.g. input_ids=2x16")
    parser.add_argument("--seed", type=int, default=d.seed,
                        help="seed of the random float inputs")
    if profile:
        parser.add_argument("--warmup", type=int, default=d.warmup, metavar="N",
                            help="untimed runs first (default %(default)s)")
        parser.add_argument("--repeats", type=int, default=d.repeats, metavar="N",
                            help="timed runs; medians are reported (default %(default)s)")
        parser.add_argument("--precision", choices=PRECISIONS, default=d.precision,
                            help="fp32, or bf16 autocast")
        parser.add_argument("--threads", type=int, default=d.threads, metavar="N",
                            help="CPU threads torch may use; 0: torch's own choice, one per "
                                 "core (default: %(default)s, the steadiest: more threads spin "
                                 "against any other load)")
        parser.add_argument("--memory", action="store_true",
                            help="also measure each node's memory on the device (one more "
                                 "run) and show it beside the static estimate (`memory`)")
    parser.add_argument("--trust", action="store_true",
                        help="allow pickled weights/constants, TorchBind objects, libraries")

