"""What `numerics` compares: `NumericsSpec`, checked before any torch work starts.

Pure Python, like graph_spec.py: the CLI validates the options and plans the inputs
from the archive's JSON (an `error:` line in milliseconds, no torch); the child
(jobs/numerics.py) parses the same arguments back.
"""

from __future__ import annotations

import argparse
import math
from dataclasses import dataclass
from pathlib import Path

from inspector.core.archive import open_archive
from inspector.core.device_names import parse_device
from inspector.core.dtype_literals import PRECISIONS
from inspector.jobs import graph_spec
from inspector.jobs.graph_spec import GraphRunSpec, GraphRunSpecError

CANDIDATES = ("precision", "on", "decompose", "with", "eager")


@dataclass(frozen=True)
class NumericsSpec:
    graph: GraphRunSpec
    candidate: str  # one of CANDIDATES
    value: str = ""  # bf16 | fp16 (precision), DEV2 (on), OTHER.pt2 (with)
    rtol: float | None = None
    atol: float | None = None

    def validate(self) -> NumericsSpec:
        if self.candidate not in CANDIDATES:
            raise GraphRunSpecError(f"no candidate run chosen ({', '.join(CANDIDATES)})")
        if self.candidate == "precision" and self.value not in PRECISIONS:
            raise GraphRunSpecError(f"bad precision {self.value!r} (bf16 or fp16)")
        if self.candidate == "on":
            parse_device(self.value)
        if self.candidate == "with" and not Path(self.value).is_file():
            raise GraphRunSpecError(f"cannot compare with {self.value} (no such file)")
        for name, v in (("--rtol", self.rtol), ("--atol", self.atol)):
            if v is not None and not (math.isfinite(v) and v >= 0):
                raise GraphRunSpecError(f"{name} {v} is not a tolerance (a number >= 0)")
        if (self.rtol is None) != (self.atol is None):
            raise GraphRunSpecError("--rtol and --atol go together (as in "
                                    "torch.testing.assert_close)")
        return self

    def plan(self) -> None:
        """Plan the inputs, and check the other archive opens and has the programs."""
        names, _ = self.graph.plan()
        if self.candidate == "with":
            with open_archive(self.value) as other:
                for name in names:
                    other_program_name(name, list(other.program_names), self.value)
        if self.candidate == "eager":
            from inspector.jobs.numerics_eager import check_toy

            check_toy(self.graph.file, names)

    def to_argv(self) -> list[str]:
        argv = self.graph.to_argv()
        if self.graph.threads:
            argv += ["--threads", str(self.graph.threads)]
        argv += ["--candidate", self.candidate]
        if self.value:
            argv += ["--value", self.value]
        if self.rtol is not None:
            argv += ["--rtol", repr(self.rtol), "--atol", repr(self.atol)]
        return argv

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> NumericsSpec:
        graph = GraphRunSpec(file=args.file, device=args.device,
                             programs=tuple(args.program or ()), dims=tuple(args.dim or ()),
                             inputs=tuple(args.input or ()), seed=args.seed, trust=args.trust,
                             threads=getattr(args, "threads", 1)).validate()
        candidate, value = getattr(args, "candidate", None), getattr(args, "value", "") or ""
        if candidate is None:  # the CLI's spelling: one option per candidate
            for name in CANDIDATES:
                option = getattr(args, "with_" if name == "with" else name, None)
                if option:
                    candidate, value = name, "" if option is True else str(option)
                    break
        return cls(graph, candidate or "", value, args.rtol, args.atol).validate()


def other_program_name(name: str, others: list[str], path: str) -> str:
    """The program of the other archive compared with `name`: the same name, or its
    only program."""
    if name in others:
        return name
    if len(others) == 1:
        return others[0]
    raise GraphRunSpecError(f"{path} has no program {name!r} (programs: {', '.join(others)})")


def add_arguments(parser: argparse.ArgumentParser, cli: bool = False) -> None:
    """The options of `numerics`: the child takes --candidate/--value, the CLI one
    option per candidate (exactly one)."""
    graph_spec.add_arguments(parser)
    parser.add_argument("--threads", type=int, default=1, metavar="N",
                        help="CPU threads of the reference run (default: 1; 0: torch's own "
                             "choice, one per core, with which some kernels split their work "
                             "differently from run to run: an archive against itself then "
                             "differs in a few nodes)")
    if cli:
        group = parser.add_mutually_exclusive_group(required=True)
        group.add_argument("--precision", choices=tuple(PRECISIONS),
                           help="the program with every floating weight, buffer, constant "
                                "and input cast to this dtype (frozen dtype literals rewritten)")
        group.add_argument("--on", metavar="DEV2",
                           help="the same program on another device (--on cpu with --device "
                                "cpu: another CPU thread count, a self-check)")
        group.add_argument("--decompose", action="store_true",
                           help="run_decompositions() of the program, nodes matched through "
                                "the decomposition (from_node)")
        group.add_argument("--with", dest="with_", metavar="OTHER.pt2",
                           help="another archive (a re-export, a retarget, another torch), "
                                "nodes matched as diff matches them")
        group.add_argument("--eager", action="store_true",
                           help="the eager toy model with the archive's weights, at module "
                                "boundaries (toy archives only)")
    else:
        parser.add_argument("--candidate", choices=CANDIDATES, required=True)
        parser.add_argument("--value", default="")
    parser.add_argument("--rtol", type=float, default=None,
                        help="relative tolerance (with --atol; default: torch.testing."
                             "assert_close's for the dtypes)")
    parser.add_argument("--atol", type=float, default=None, help="absolute tolerance")
