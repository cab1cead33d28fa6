"""Archive.program from several threads (the window's tasks and the audit share one
archive): one parse, one Program object for everyone; forget_program drops it."""

from __future__ import annotations

import threading

from inspector.core import program as program_module
from inspector.core.program import lean as lean_module
from inspector.core.archive import open_archive


def test_concurrent_readers_share_one_parse(small_archive, monkeypatch):
    calls = []
    real = program_module.parse_program

    def counting(*args, **kwargs):
        calls.append(threading.get_ident())
        return real(*args, **kwargs)

    def counting_lean(*args, **kwargs):
        calls.append(threading.get_ident())
        return real_lean(*args, **kwargs)

    real_lean = lean_module.parse_program_lean
    monkeypatch.setattr(program_module, "parse_program", counting)  # the full parse
    monkeypatch.setattr(lean_module, "parse_program_lean", counting_lean)  # the archive's
    with open_archive(small_archive) as archive:
        name = archive.program_names[0]
        start = threading.Barrier(8)
        got = []

        def read():
            start.wait()
            got.append(archive.program(name))

        threads = [threading.Thread(target=read) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        assert len(got) == 8 and all(p is got[0] for p in got)
        assert len(calls) == 1
        archive.forget_program(name)
        again = archive.program(name)
        assert again is not got[0] and again.node_count == got[0].node_count
        assert len(calls) == 2
