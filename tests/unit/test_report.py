"""`pt2-inspector report`: one self-contained HTML page, checked as a browser sees it.

The archive is a real export (a device literal to find, a dynamic dim, a NaN
weight) whose file-borne strings (stack traces, module paths, weight names)
were rewritten to HTML/script that would fetch from a local HTTP server. The
page is loaded in headless Chromium (Debian's `chromium`): its DOM must hold
every section, each finding's link must reach its listing line, and the server
must see no request at all (a control page proves the detector can fire).
"""

from __future__ import annotations

import html.parser
import http.server
import json
import os
import shutil
import subprocess
import sys
import threading
import warnings
import zipfile
from pathlib import Path
from typing import Any

import pytest
from archive_factory import ArchiveFactory

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
needs_chromium = pytest.mark.skipif(
    CHROMIUM is None, reason="headless Chromium not installed (apt-get install -y chromium)")


class _Recorder(http.server.BaseHTTPRequestHandler):
    hits: list[str] = []

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        _Recorder.hits.append(self.path)
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.end_headers()
        self.wfile.write(b"x")

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def server() -> Any:
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()
    thread.join(5)


def _evil(base: str, tag: str) -> str:
    return (f'<img src="{base}/{tag}-img"><script src="{base}/{tag}-js"></script>'
            f'<link rel=stylesheet href="{base}/{tag}-css">" onload="fetch(\'{base}/{tag}-attr\')')


@pytest.fixture(scope="module")
def clean(archive_factory: ArchiveFactory) -> Path:
    """A real export: a device literal to find, a dynamic dim, a NaN weight."""
    import torch
    from torch.export import Dim

    class M(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lin = torch.nn.Linear(4, 3)
            w = torch.randn(3)
            w[1] = float("nan")
            self.register_buffer("scale", w)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            pos = torch.arange(x.shape[0], device="cpu")
            return self.lin(x) * self.scale + pos.unsqueeze(1)

    return archive_factory.export("report/clean", M(), (torch.randn(5, 4),),
                                  dynamic_shapes=({0: Dim("n", min=2)},))


@pytest.fixture(scope="module")
def archive(tmp_path_factory: pytest.TempPathFactory, clean: Path, server: str) -> Path:
    # every string the page shows from the file becomes hostile markup
    hostile = tmp_path_factory.mktemp("report") / "hostile.pt2"
    with zipfile.ZipFile(clean) as zin, zipfile.ZipFile(hostile, "w") as zout:
        for info in zin.infolist():
            data = zin.read(info.filename)
            if info.filename.endswith("models/model.json"):
                doc = json.loads(data)
                for node in doc["graph_module"]["graph"]["nodes"]:
                    meta = node.get("metadata", {})
                    if "stack_trace" in meta:
                        meta["stack_trace"] = (f'  File "/x/{_evil(server, "trace")}.py", line 3, in '
                                               f"forward\n    {_evil(server, 'code')}\n")
                data = json.dumps(doc).encode()
            if info.filename.endswith("model_weights_config.json"):
                doc = json.loads(data)
                doc["config"] = {(_evil(server, "weight") if k == "scale" else k): v
                                 for k, v in doc["config"].items()}
                data = json.dumps(doc).encode()
            zout.writestr(info, data)
    return hostile


@pytest.fixture(scope="module")
def profile(tmp_path_factory: pytest.TempPathFactory, server: str) -> Path:
    path = tmp_path_factory.mktemp("profile") / "profile.json"
    path.write_text(json.dumps({"device": "cuda:0", "programs": [{
        "name": "model", "forward_ms": 2.5,
        "nodes": [{"name": "arange", "target": "aten.arange.default", "ms": 0.5, "share": 0.2,
                   "line": 9, "module": _evil(server, "profile")},
                  {"name": "linear", "target": "aten.linear.default", "ms": 1.5, "share": 0.6,
                   "line": 12, "module": "lin"}],
        "modules": [{"name": "lin", "ms": 1.5, "share": 0.6}]}]}))
    return path


def _cli(*args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "inspector", *args], capture_output=True,
                          text=True, env=env, timeout=300)


@pytest.fixture(scope="module")
def page(archive: Path, profile: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("page") / "report.html"
    result = _cli("report", str(archive), "-o", str(out), "--profile", str(profile))
    assert result.returncode == 0, result.stderr
    return out


class _Tags(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))


def _tags(text: str) -> list[tuple[str, dict[str, str | None]]]:
    parser = _Tags()
    parser.feed(text)
    return parser.tags


def test_page_is_self_contained_and_escaped(page: Path, server: str) -> None:
    text = page.read_text()
    tags = _tags(text)
    assert [t for t, _ in tags].count("script") == 1  # our own inline one
    for tag, attrs in tags:
        assert tag not in ("img", "link", "iframe", "object", "embed"), (tag, attrs)
        assert not (tag == "script" and attrs.get("src")), attrs
        assert not any(k.startswith("on") for k in attrs), (tag, attrs)
        for key in ("src", "href"):
            value = attrs.get(key) or ""
            assert not value or value.startswith("#"), (tag, attrs)
    assert server not in "".join(str(a) for _, a in tags)
    assert "&lt;img src=&quot;" + server in text  # the file's markup is shown, as text
    assert "Content-Security-Policy" in text


# --- every field from the file, hostile at once --------------------------------------

def _marker(field: str) -> str:
    """Markup that names its field and fits where a "/" cannot go (a file name, a zip
    folder's name, an op name, an `nn_module_stack` entry: no "/", "," or ";")."""
    return f"<b id=pt2i-{field} onmouseover=alert(1)>{field}&amp;\"'"


@pytest.fixture(scope="module")
def every_field(tmp_path_factory: pytest.TempPathFactory, clean: Path,
                server: str) -> dict[str, Any]:
    """The clean export rewritten so that every string of the file that reaches the
    page is markup: the archive's file name, the program's name (its records' names),
    torch_version, an op name, module paths, stack traces (file and code), a weight
    name, an extra record's path; and a profile whose node, op and module are markup.
    Returns the page, the archive, and field -> the text the page must show."""
    prog = _marker("program")
    shown = {"file": _marker("file"), "program": prog, "op": _marker("op"),
             "torch_version": _evil(server, "torch_version"), "record": _evil(server, "record"),
             "trace": _evil(server, "trace"), "code": _evil(server, "code"),
             "weight": _evil(server, "weight"), "profile_node": _marker("profile_node"),
             "profile_op": _evil(server, "profile_op"), "profile_module": _evil(server, "profile_module")}
    folder = tmp_path_factory.mktemp("every-field")
    path = folder / (shown["file"] + ".pt2")
    renamed = {"models/model.json": f"models/{prog}.json",
               "data/weights/model_weights_config.json": f"data/weights/{prog}_weights_config.json",
               "data/constants/model_constants_config.json":
                   f"data/constants/{prog}_constants_config.json",
               "data/sample_inputs/model.pt": f"data/sample_inputs/{prog}.pt"}
    with zipfile.ZipFile(clean) as zin, zipfile.ZipFile(path, "w") as zout:
        top = ""
        for info in zin.infolist():
            data = zin.read(info.filename)
            top, rel = info.filename.split("/", 1)
            if rel == "models/model.json":
                doc = json.loads(data)
                doc["torch_version"] = shown["torch_version"]
                for node in doc["graph_module"]["graph"]["nodes"]:
                    meta = node.setdefault("metadata", {})
                    if "stack_trace" in meta:
                        meta["stack_trace"] = (f'  File "/x/{shown["trace"]}.py", line 3, in '
                                               f'forward\n    {shown["code"]}\n')
                    if "nn_module_stack" in meta:
                        meta["nn_module_stack"] += (f";L__self__m,{_marker('module')},"
                                                    f"{_marker('module_class')}")
                    if node["target"] == "torch.ops.aten.mul.Tensor":
                        node["target"] = f"torch.ops.aten.{shown['op']}.Tensor"
                data = json.dumps(doc).encode()
            if rel == "data/weights/model_weights_config.json":
                doc = json.loads(data)
                doc["config"] = {(shown["weight"] if k == "scale" else k): v
                                 for k, v in doc["config"].items()}
                data = json.dumps(doc).encode()
            zout.writestr(f"{top}/{renamed.get(rel, rel)}", data)
        zout.writestr(f"{top}/extra/{shown['record']}.txt", b"not code")
    profile = folder / "profile.json"
    profile.write_text(json.dumps({"device": "cuda:0", "programs": [{
        "name": prog, "forward_ms": 2.5,
        "nodes": [{"name": shown["profile_node"], "target": shown["profile_op"], "ms": 0.5,
                   "share": 0.2, "line": 9, "module": shown["profile_module"]}],
        "modules": [{"name": shown["profile_module"], "ms": 0.5, "share": 0.2}]}]}))
    out = folder / "report.html"
    result = _cli("report", str(path), "-o", str(out), "--profile", str(profile))
    assert result.returncode == 0, result.stderr
    return {"page": out, "archive": path, "shown": shown}


class _Page(html.parser.HTMLParser):
    """The page as a browser's parser reads it: its elements and its text."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def _parsed(text: str) -> _Page:
    page = _Page()
    page.feed(text)
    page.close()
    return page


def test_every_field_from_the_file_is_shown_as_text(every_field: dict[str, Any], clean: Path,
                                                    server: str, tmp_path: Path) -> None:
    """Parsed, the page has the elements and attributes of a clean page and no
    more; each hostile string is in its text, whole (shown, not dropped, not markup)."""
    parsed = _parsed(every_field["page"].read_text())
    clean_page = tmp_path / "clean.html"
    assert _cli("report", str(clean), "-o", str(clean_page)).returncode == 0
    ours = _parsed(clean_page.read_text())
    allowed_tags = {t for t, _ in ours.tags}
    allowed_attrs = {k for _, a in ours.tags for k in a}
    for tag, attrs in parsed.tags:
        assert tag in allowed_tags, (tag, attrs)
        assert set(attrs) <= allowed_attrs, (tag, attrs)
        assert not any(k.startswith("on") for k in attrs), (tag, attrs)
        assert not any("pt2i-" in (v or "") or server in (v or "") for v in attrs.values()), attrs
    assert sum(t == "script" for t, _ in parsed.tags) == 1
    text = "".join(parsed.text)
    missing = [field for field, value in every_field["shown"].items() if value not in text]
    assert not missing, f"not shown as text: {missing}"


@needs_chromium
def test_chromium_runs_nothing_from_any_field(every_field: dict[str, Any], server: str,
                                              tmp_path: Path) -> None:
    _Recorder.hits.clear()
    dom = _chromium(every_field["page"], tmp_path)
    assert _Recorder.hits == [], f"the report made network requests: {_Recorder.hits}"
    assert 'id="pt2i-' not in dom and "<b id=" not in dom  # no element made of a field
    assert 'id="p0-listing"' in dom and 'id="records"' in dom


def test_sections_and_links(page: Path) -> None:
    text = page.read_text()
    tags = _tags(text)
    ids = {a["id"] for _, a in tags if a.get("id")}
    assert {"p0", "p0-findings", "p0-shapes", "p0-weights", "p0-profile", "p0-listing",
            "records"} <= ids
    links = [a["href"] for t, a in tags if t == "a" and a.get("href")]
    assert all(h[1:] in ids for h in links), [h for h in links if h[1:] not in ids]
    finding_links = [h for h in links if h.startswith("#p0-L")]
    assert finding_links, "no finding links to a listing line"
    assert "device-literal" in text and "arange" in text
    assert text.count("<details class=src>") >= 1  # source comments folded (one frame here)
    assert "class=flag" in text and "1 with NaN/Inf" in text  # the NaN weight
    assert "<td><code>s" in text and "<td>[2, inf]</td>" in text  # the dynamic dim's range


def _shapes_part(text: str, index: int = 0) -> str:
    start = text.index(f'id="p{index}-shapes"')
    return text[start:text.index("<div class=sub", start)]


def test_shapes_section_is_the_shapes_command(page: Path, archive: Path) -> None:
    """The page's shapes are core/shapes.py's, as `pt2-inspector shapes --json` gives them
    (not the signature alone): every input, every symbol with its range and the input
    dims it stands for; each name escaped."""
    shapes = json.loads(_cli("shapes", str(archive), "--json").stdout)["programs"][0]
    part = _shapes_part(page.read_text())
    for inp in shapes["inputs"]:
        assert f"<td><code>{html.escape(inp['name'])}</code></td><td>{html.escape(inp['kind'])}" in part
        if inp["shape"] is not None:
            assert f"<code>[{html.escape(', '.join(inp['shape']))}]</code>" in part, inp
    assert shapes["symbols"], "the archive has a dynamic dim"
    for name, sym in shapes["symbols"].items():
        hi = "inf" if sym["max"] is None else sym["max"]
        row = f"<td><code>{html.escape(name)}</code></td><td>[{sym['min']}, {hi}]</td>"
        assert row in part, (row, part)
        for src in sym["sources"]:  # x.shape[0]: the dim the symbol stands for
            assert html.escape(src) in part


def test_shapes_section_escapes_and_links_assertions() -> None:
    """An unbacked size gets a runtime assertion: it is listed, linked to its listing
    line, and a hostile input name is shown as text."""
    import torch

    from inspector.core.archive import open_archive
    from inspector.core.report import program_shapes_section
    from inspector.core.shapes import program_shapes

    class M(torch.nn.Module):
        def forward(self, x: torch.Tensor, n: torch.Tensor) -> torch.Tensor:
            k = n.item()
            torch._check(k >= 1)
            torch._check(k <= 4)
            return x[:k] * 2

    import tempfile

    with tempfile.TemporaryDirectory() as tmp, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        path = Path(tmp) / "unbacked.pt2"
        ep = torch.export.export(M(), (torch.randn(6, 2), torch.tensor(3)))
        torch.export.save(ep, str(path))
        with open_archive(path) as a:
            program = a.program(a.program_names[0])
            ps = program_shapes(program)
            ps.inputs[0].name = '<img src=x onerror="alert(1)">'
            part = program_shapes_section(program, 0, None, ps)
    assert "<img" not in part and "&lt;img src=x onerror=&quot;alert(1)&quot;&gt;" in part
    assert ps.assertions, "torch recorded no runtime assertion"
    for a in ps.assertions:
        assert html.escape(a.condition) in part
    assert 'href="#p0-L' in part  # each assertion links to its line


def test_finding_lines_are_the_listed_lines(page: Path, archive: Path) -> None:
    """`line N` in the page is line N of `pt2-inspector list` (1-based), and it is the node's."""
    audit = json.loads(_cli("audit", str(archive), "--json").stdout)
    listing = _cli("list", str(archive)).stdout.splitlines()[1:]  # drop "# program: model"
    text = page.read_text()
    lined = [f for f in audit if f["line"] and f["program"] == "model"]
    assert lined
    for f in lined:
        assert f'href="#p0-L{f["line"]}"' in text
        assert f["node"] and listing[f["line"] - 1].lstrip().startswith(f["node"])


@needs_chromium
def test_chromium_loads_it_without_network(page: Path, archive: Path, server: str,
                                          tmp_path: Path) -> None:
    _Recorder.hits.clear()
    control = tmp_path / "control.html"
    control.write_text(f'<html><body><img src="{server}/control"></body></html>')
    _chromium(control, tmp_path)
    assert _Recorder.hits == ["/control"], "the request detector does not work"
    _Recorder.hits.clear()
    dom = _chromium(page, tmp_path)
    assert _Recorder.hits == [], f"the report made network requests: {_Recorder.hits}"
    for anchor in ("p0-findings", "p0-shapes", "p0-weights", "p0-profile", "p0-listing", "records"):
        assert f'id="{anchor}"' in dom, anchor
    listed = len(_cli("list", str(archive)).stdout.splitlines()) - 1  # minus "# program: model"
    assert dom.count('class="ln') == listed  # every listing line, rendered
    png = tmp_path / "shot.png"
    _chromium(page, tmp_path, screenshot=png)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 20_000


def _chromium(path: Path, tmp: Path, screenshot: Path | None = None) -> str:
    argv = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
            f"--user-data-dir={tmp / 'chromium-profile'}", "--virtual-time-budget=3000",
            "--window-size=1400,1000"]
    argv += [f"--screenshot={screenshot}"] if screenshot else ["--dump-dom"]
    result = subprocess.run([*argv, path.as_uri()], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stdout


# --- the command's contract ------------------------------------------------------------

def test_bad_output_and_profile_write_nothing(archive: Path, tmp_path: Path) -> None:
    missing = tmp_path / "nope" / "r.html"
    r = _cli("report", str(archive), "-o", str(missing))
    assert r.returncode == 2 and r.stderr.startswith("error: ") and r.stderr.count("\n") == 1
    assert not missing.parent.exists()
    r = _cli("report", str(archive), "-o", str(tmp_path))
    assert r.returncode == 2 and "folder" in r.stderr
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    out = tmp_path / "r.html"
    out.write_text("old report")
    r = _cli("report", str(archive), "-o", str(out), "--profile", str(bad))
    assert r.returncode == 2 and r.stderr.startswith("error: profile")
    r = _cli("report", str(archive), "-o", str(out), "--program", "nope")
    assert r.returncode == 2 and r.stderr.startswith("error: ")
    assert out.read_text() == "old report"  # left intact
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.json", "r.html"]  # no temp file


def test_report_of_a_multi_program_archive(tmp_path: Path) -> None:
    """Each program gets its own sections; anchors never collide."""
    import torch
    from torch.export.pt2_archive._package import package_pt2

    class A(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.w = torch.nn.Parameter(torch.randn(3))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x * self.w

    path = tmp_path / "multi.pt2"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        eps = {"first": torch.export.export(A(), (torch.randn(3),)),
               "second": torch.export.export(A(), (torch.randn(3),))}
        package_pt2(str(path), exported_programs=eps)
    out = tmp_path / "multi.html"
    r = _cli("report", str(path), "-o", str(out))
    assert r.returncode == 0, r.stderr
    ids = [a["id"] for _, a in _tags(out.read_text()) if a.get("id")]
    assert len(ids) == len(set(ids))
    assert {"p0-listing", "p1-listing", "p0-weights", "p1-weights"} <= set(ids)
    r = _cli("report", str(path), "-o", str(out), "--program", "second")
    assert r.returncode == 0 and "p1-listing" not in out.read_text()


def test_listing_is_highlighted_and_long_ones_stay_plain(archive: Path, monkeypatch) -> None:
    from inspector.core import report
    from inspector.core.archive import open_archive
    from inspector.core.listing import render_listing

    with open_archive(archive) as a:
        listing = render_listing(a.program("model"))
    page = report.listing_html(listing, 0, set())
    assert '<span class="kt">&quot;f32[' in page or '<span class="kt">"f32[' in page  # annotations
    assert '<span class="nf">torch.ops.aten.' in page  # op targets
    monkeypatch.setattr(report, "MAX_HIGHLIGHTED_LINES", 3)
    plain = report.listing_html(listing, 0, set())
    assert "Not highlighted" in plain and '<span class="nf">' not in plain
    assert all(f'id="p0-L{n}"' in plain for n in range(1, len(listing) + 1))


DEMO = ROOT / "resources" / "demo" / "toy-tiny.pt2"


def _graph_svg(text: str, index: int) -> str:
    start = text.index('<div class=graph>', text.index(f'id="p{index}-graph"'))
    return text[start + len('<div class=graph>'):text.index("</svg>", start) + len("</svg>")]


def _untitled(svg: str) -> list[str]:
    return [line for line in svg.strip().splitlines() if not line.startswith("<title>")]


@pytest.mark.skipif(shutil.which("dot") is None, reason="needs Graphviz's dot (apt install graphviz)")
def test_graph_section_is_the_graph_commands_picture(tmp_path: Path) -> None:
    """Each program's first view as `pt2-inspector graph` draws it (the toy decoder's
    first view opens its sole chain of modules, `--depth 2`), inline and well-formed."""
    import xml.etree.ElementTree as ET

    out = tmp_path / "demo.html"
    r = _cli("report", str(DEMO), "-o", str(out))
    assert r.returncode == 0, r.stderr
    text = out.read_text()
    from inspector.core.archive import open_archive

    with open_archive(DEMO) as ar:
        names = list(ar.program_names)
    assert [a.get("id") for _, a in _tags(text) if a.get("id", "").endswith("-graph")] == [
        f"p{i}-graph" for i in range(len(names))]
    for i in range(len(names)):
        ET.fromstring(_graph_svg(text, i))  # well-formed SVG
    svg = tmp_path / "decoder.svg"
    r = _cli("graph", str(DEMO), "--program", "decoder", "--depth", "2", "--svg", str(svg))
    assert r.returncode == 0, r.stderr
    assert _untitled(_graph_svg(text, names.index("decoder"))) == _untitled(svg.read_text())


def test_a_graph_too_big_to_draw_is_named_so(monkeypatch) -> None:
    from inspector.core import report
    from inspector.core.archive import open_archive
    from inspector.core.graph_model import GraphModel
    from inspector.core.listing import render_listing

    monkeypatch.setattr(report, "MAX_GRAPH_BOXES", 5)
    with open_archive(DEMO) as ar:
        program = ar.program("decoder")
    listing = render_listing(program)
    part = report.graph_section(program, listing)
    boxes = len(GraphModel(program).level("").boxes) + len(GraphModel(program).level("decoder").boxes)
    assert "<svg" not in part
    assert f"the top graph has {boxes:,} boxes" in part and "--module PATH" in part


def test_only_the_first_programs_graphs_are_drawn(tmp_path: Path, monkeypatch) -> None:
    """An archive of many programs: the first MAX_GRAPH_PROGRAMS get their picture,
    the others a line naming the command (each level is a `dot` child process)."""
    from inspector.core import report
    from inspector.core.archive import open_archive

    monkeypatch.setattr(report, "MAX_GRAPH_PROGRAMS", 1)
    with open_archive(DEMO) as ar:
        names = list(ar.program_names)
        page = report.build_report(ar, names)
    assert page.count("<div class=graph>") == 1
    assert f"--program {names[1]} --svg OUT.svg" in page
