"""The program of a serialized ExportedProgram: its model and its JSON parser.

`model.py` holds the record classes (msgspec Structs), `parser.py` builds
them from the parsed JSON.
Both are re-exported here so importers keep writing `inspector.core.program`.
A package rather than two sibling modules because the re-export of the parser
from the model's module would be an import cycle (parser needs the model).
"""

from __future__ import annotations

from inspector.core.program.model import (
    FLOAT_WORDS,
    KEYWORD,
    KNOWN_SCHEMA_MAJOR,
    LITERAL_KINDS,
    PLAIN_KINDS,
    POSITIONAL,
    REFERENCE_KEYS,
    SCALAR_KINDS,
    SYM_KINDS,
    ArgKind,
    Argument,
    Device,
    Graph,
    InputSpec,
    NamedArgument,
    Node,
    OutputSpec,
    Program,
    Range,
    SymArg,
    SymScalar,
    TensorMeta,
    decode_device,
    nodes_mentioning,
    sym_scalar,
    sym_size,
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
    "FLOAT_WORDS", "KEYWORD", "KNOWN_SCHEMA_MAJOR", "LITERAL_KINDS", "MAX_ARGUMENT_DEPTH",
    "MAX_GRAPH_NESTING", "MAX_NODES", "PLAIN_KINDS", "POSITIONAL", "REFERENCE_KEYS",
    "SCALAR_KINDS", "SYM_KINDS", "ArgKind", "Argument", "Device", "Graph", "InputSpec",
    "NamedArgument", "Node", "OutputSpec", "Program", "Range", "SymArg", "SymScalar",
    "TensorMeta", "decode_device", "parse_program", "parse_tensor_meta", "sym_scalar", "sym_size",
    "value_names",
]
