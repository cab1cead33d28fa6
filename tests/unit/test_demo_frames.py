"""The bundled demo archive's stack traces point at the code they name: each frame's
file, as this machine resolves it (core/sources.py: as the installed package), holds
the recorded code at the recorded line. Fails when toy.py (or an installed library)
changed under the demo: regenerate it with packaging/make_demo_archive.py."""

from __future__ import annotations

import zipfile

import orjson

from inspector.core.frames import parse_stack_trace
from inspector.core.sources import SourceResolver, check_line
from inspector.resources import demo_archive


def _frames():
    with zipfile.ZipFile(demo_archive()) as z:
        for name in z.namelist():
            if "/models/" in name and name.endswith(".json"):
                doc = orjson.loads(z.read(name))
                for node in doc["graph_module"]["graph"]["nodes"]:
                    trace = (node.get("metadata") or {}).get("stack_trace")
                    for frame in parse_stack_trace(trace):
                        yield name, node.get("name"), frame


def test_every_frame_resolves_here_and_holds_its_code():
    resolver = SourceResolver()
    seen = 0
    own = 0
    for record, node, frame in _frames():
        assert not frame.file.startswith("/"), f"{record} {node}: absolute path {frame.file}"
        local = resolver.resolve(frame.file)
        assert local is not None, f"{record} {node}: {frame.file} not found here"
        if not frame.code:
            continue
        check = check_line(local, frame.line, frame.code)
        assert check.status == "same", (
            f"{record} {node}: {frame.location} holds {check.local_code!r}, not "
            f"{frame.code!r} ({check.status}): regenerate the demo "
            "(packaging/make_demo_archive.py)")
        seen += 1
        own += frame.file == "inspector/jobs/toy.py"
    assert seen > 100 and own > 10  # the toy's own frames are among them
