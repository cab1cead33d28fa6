"""Inputs named after Python builtins (issue 14, item 1).

FX's code generator never prints a builtin's name for a value: the
placeholder `input` of every nn.Sequential export is printed `input_1`
(`input_1 = input` opens forward). Each case is a real export, saved and
loaded by torch; the listing must equal torch's print_readable, and the name
links (definition, users, search) must take both names.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from archive_factory import ArchiveFactory

from fidelity_cases import Archive, compare
from fidelity_models import builtin_name_builders
from inspector.core.archive import open_archive
from inspector.core.listing import render_listing, value_users
from inspector.core.search import SearchIndex


@pytest.fixture(scope="module")
def archives(archive_factory: ArchiveFactory) -> dict[str, Path]:
    return {name: archive_factory.save(name, build) for name, _group, build in builtin_name_builders()}


def test_listing_matches_torch_print_readable(archives: dict[str, Path]) -> None:
    assert len(archives) >= 4
    for name, path in archives.items():
        for comparison in compare(Archive(name, "builtins", path)):
            assert comparison.ratio == 1.0, "\n".join([name, *comparison.diff])
            # the case really exercises the rename
            assert any(line.startswith("input_1 = input") for line in comparison.theirs)


def test_names_link_both_ways(archives: dict[str, Path]) -> None:
    with open_archive(archives["builtins/sequential"]) as archive:
        program = archive.program("model")
    listing = render_listing(program)
    alias = listing.lines.index("        input_1 = input")
    first_use = next(i for i, t in enumerate(listing.lines) if "(input_1," in t)
    # the input is defined in the signature; its printed name goes back to it
    assert listing.value_name("", "input_1") == "input"
    assert listing.definitions[("", listing.value_name("", "input_1"))] == 1
    assert listing.aliases[("", "input")] == alias
    assert listing.printed_name("", "input") == "input_1"
    assert listing.value_name("", "linear") == "linear"
    users = value_users(program, listing)
    assert users[("", "input")] == [first_use]
    index = SearchIndex(listing)
    assert alias in index.search("name:input_1").lines
    assert alias in index.search("name:input").lines
    assert index.search("input_1").lines == [i for i, t in enumerate(listing.lines)
                                              if "input_1" in t]


def test_taken_name_moves_on(archives: dict[str, Path]) -> None:
    """`input_1` is a user input too: torch prints it `input_2`."""
    with open_archive(archives["builtins/many_builtins"]) as archive:
        program = archive.program("model")
    listing = render_listing(program)
    text = listing.text()
    for alias in ("input_1 = input\n", "id_1 = id\n", "type_1 = type\n", "sum_1 = sum\n",
                  "max_1 = max\n", "input_2 = input_1\n"):
        assert alias in text
    assert listing.printed_name("", "input_1") == "input_2"
    assert listing.value_name("", "input_2") == "input_1"
    assert listing.value_name("", "input_1") == "input"
    users = value_users(program, listing)
    sum_line = next(i for i, t in enumerate(listing.lines) if "sum.default(input_2)" in t)
    # the token input_2 is the file's input_1, read by the sum only
    assert users[("", listing.value_name("", "input_2"))] == [sum_line]
    # the token input_1 is the file's input: the add and the return read it
    reads = users[("", listing.value_name("", "input_1"))]
    assert "add.Tensor(input_1," in listing.lines[reads[0]]
    assert listing.lines[reads[-1]].strip().startswith("return (")
    assert listing.lines[reads[-1]].endswith("input_1)")
    assert listing.definitions[("", "input_1")] == 1  # the file's input_1: the signature
