"""Annotations (core/annotations.py) on a real exported program: node-keyed marks and
heat land on the listing line that defines the node; merging and replacing layers."""

from __future__ import annotations

import pytest

from inspector.core.annotations import (
    ERROR,
    INFO,
    WARNING,
    AnnotationLayer,
    AnnotationStore,
    Heat,
    Mark,
    resolve,
)
from inspector.core.archive import open_archive
from inspector.core.listing import render_listing


@pytest.fixture(scope="module")
def program_listing(small_archive):
    with open_archive(small_archive) as archive:
        name = archive.program_names[0]
        program = archive.program(name)
        yield program, render_listing(program)


def _nodes(program):
    return [n for n in program.all_nodes() if n.name]


def test_marks_by_node_name_land_on_the_defining_line(program_listing):
    program, listing = program_listing
    nodes = _nodes(program)
    assert len(nodes) >= 4
    first, second = nodes[0], nodes[1]
    layer = AnnotationLayer("check", marks={first.name: Mark(ERROR, "fails on meta"),
                                            second.name: Mark(INFO)})
    out = resolve([layer], program, listing)
    line = listing.line_of(first)
    assert out.marks[line] == Mark(ERROR, "fails on meta")
    # the line really is that node's statement (what the user sees next to the dot)
    assert listing.lines[line].lstrip().startswith(first.name)
    assert set(out.marks) == {listing.line_of(first), listing.line_of(second)}
    assert out.heat == {} and out.heat_source is None


def test_worst_severity_wins_and_tooltips_join(program_listing):
    program, listing = program_listing
    node = _nodes(program)[2]
    line = listing.line_of(node)
    store = AnnotationStore()
    store.set(program.name, AnnotationLayer("audit", line_marks={line: Mark(WARNING, "cpu literal")}))
    store.set(program.name, AnnotationLayer("check", marks={node.name: Mark(ERROR, "no kernel")}))
    merged = store.resolve(program, listing).marks[line]
    assert merged.severity == ERROR
    assert merged.tooltip.split("\n") == ["cpu literal", "no kernel"]
    store.clear(program.name, "check")
    assert store.resolve(program, listing).marks[line] == Mark(WARNING, "cpu literal")
    store.clear(program.name)
    assert store.resolve(program, listing).marks == {}


def test_heat_is_relative_to_the_layer_maximum_and_the_newest_layer_shows(program_listing):
    program, listing = program_listing
    nodes = _nodes(program)
    times = {n.name: float(i + 1) for i, n in enumerate(nodes)}
    store = AnnotationStore()
    store.set(program.name, AnnotationLayer(
        "profile", title="time", heat={k: Heat(v, f"{v:.1f} ms") for k, v in times.items()}))
    out = store.resolve(program, listing)
    assert out.heat_source == "profile" and out.heat_title == "time"
    top = nodes[-1]
    assert out.heat[listing.line_of(top)].level == 1.0
    assert out.heat[listing.line_of(nodes[0])].level == pytest.approx(1 / len(nodes))
    assert out.heat[listing.line_of(nodes[0])].text == "1.0 ms"
    # a second heat layer takes the column; setting the first again brings it back
    store.set(program.name, AnnotationLayer("weights", heat={nodes[0].name: Heat(5, "5 B")}))
    assert store.resolve(program, listing).heat_source == "weights"
    store.set(program.name, store.layer(program.name, "profile"))
    assert store.resolve(program, listing).heat_source == "profile"


def test_unknown_names_are_ignored(program_listing):
    program, listing = program_listing
    layer = AnnotationLayer("diff", marks={"no_such_node": Mark(ERROR)},
                            heat={"no_such_node": Heat(1.0)})
    out = resolve([layer], program, listing)
    assert out.marks == {} and out.heat == {}
    assert layer.is_empty() is False and AnnotationLayer("x").is_empty()


def test_values_without_a_node_of_their_own_resolve_by_their_listing_line(program_listing):
    """`values, index = torch.max(...)`: the listing prints a `getitem` line per output
    (torch's FX graph has them as nodes, which check/profile report by name)."""
    program, listing = program_listing
    node_names = {n.name for n in program.all_nodes()}
    getitems = [name for (graph, name), line in listing.definitions.items()
                if graph == "" and name not in node_names and " = " in listing.lines[line]
                and "getitem" in name]
    assert getitems, "the small model's torch.max should print getitem lines"
    layer = AnnotationLayer("profile", heat={name: Heat(float(i + 1), f"{i + 1} ms")
                                             for i, name in enumerate(getitems)})
    out = resolve([layer], program, listing)
    for name in getitems:
        assert listing.definitions[("", name)] in out.heat
