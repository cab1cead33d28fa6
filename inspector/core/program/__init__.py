"""The program of a serialized ExportedProgram: its model and its JSON parser.

`model.py` holds the record classes (msgspec Structs), `parser.py` builds
them from the parsed JSON.
Both are re-exported here so importers keep writing `inspector.core.program`.
A package rather than two sibling modules because the re-export of the parser
from the model's module would be an import cycle (parser needs the model).
"""

from __future__ import annotations

from inspector.core.program.model import (
    KEYWORD,
    KNOWN_SCHEMA_MAJOR,
    POSITIONAL,
    Argument,
    Device,
    Graph,
    InputSpec,
    NamedArgument,
    Node,
    OutputSpec,
    Program,
    Range,
    TensorMeta,
    value_names,
)
from inspector.core.program.parser import (
    MAX_ARGUMENT_DEPTH,
    MAX_GRAPH_NESTING,
    MAX_NODES,
    parse_program,
    parse_tensor_meta,
)

__all__ = [
    "KEYWORD", "KNOWN_SCHEMA_MAJOR", "MAX_ARGUMENT_DEPTH", "MAX_GRAPH_NESTING", "MAX_NODES",
    "POSITIONAL", "Argument", "Device", "Graph", "InputSpec", "NamedArgument", "Node",
    "OutputSpec", "Program", "Range", "TensorMeta", "parse_program", "parse_tensor_meta",
    "value_names",
]
