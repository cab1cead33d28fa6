"""`pt2-inspector graph` as a user runs it (a real child process) on the demo toy (a real
torch export): --json boxes and edges with the picture's properties, --depth opening
levels, SVG that is well-formed XML with every text from the file escaped, a PNG,
and the one-line errors (exit 2, nothing written) for bad options and unsafe paths."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path
from xml.etree import ElementTree

import pytest
from test_graph_layout import check_picture

from inspector.core.graph_layout import dot_available
from inspector.core.graph_model import Box
from inspector.core.graph_picture import Picture, PictureBox, PictureEdge

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "resources" / "demo" / "toy-tiny.pt2"
HOSTILE = '<attn&"x>'

pytestmark = pytest.mark.skipif(not dot_available(),
                                reason="needs Graphviz's dot (apt install graphviz)")


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "inspector", "graph", *args],
                          capture_output=True, text=True, timeout=300, cwd=ROOT)


def _picture(doc: dict) -> Picture:
    """The --json document as a Picture (to check it with the layout test's checks)."""
    boxes = [PictureBox(b["id"], Box(b["id"], b["kind"], b["label"]), b["x"], b["y"], b["w"],
                        b["h"], b["parent"], b["open"]) for b in doc["boxes"]]
    edges = [PictureEdge(e["from"], e["to"], [tuple(p) for p in e["points"]], e["values"],
                         e["back"], e["parent"]) for e in doc["edges"]]
    return Picture(doc["graph"], doc["module"], doc["width"], doc["height"], boxes, edges)


def test_json_boxes_and_edges_at_each_depth() -> None:
    one = json.loads(cli(str(DEMO), "--json").stdout)
    assert one["program"] == "decoder" and not any(b["open"] for b in one["boxes"])
    assert {"m:decoder", "in::input_ids", "out::linear"} <= {b["id"] for b in one["boxes"]}
    assert all({"id", "kind", "x", "y", "w", "h"} <= set(b) for b in one["boxes"])
    assert all({"from", "to", "points"} <= set(e) for e in one["edges"])
    check_picture(_picture(one))
    three = json.loads(cli(str(DEMO), "--depth", "3", "--json").stdout)
    opened = {b["module"] for b in three["boxes"] if b["open"]}
    assert opened == {"decoder", "decoder.transformer", "decoder.lm_head"}  # depths 1 and 2
    check_picture(_picture(three))
    block = json.loads(cli(str(DEMO), "--module", "decoder.transformer.h.0", "--json").stdout)
    assert block["module"] == "decoder.transformer.h.0"
    assert {"m:decoder.transformer.h.0.attn", "m:decoder.transformer.h.0.mlp"} <= {
        b["id"] for b in block["boxes"]}
    # weights are folded into their readers, named on them
    assert any("p_decoder_transformer_h_0_ln_1_weight" in b.get("weights", [])
               for b in block["boxes"])


def _hostile_archive(tmp: Path) -> Path:
    """The demo with a module path that is markup (as a crafted file may hold)."""
    out = tmp / "hostile.pt2"
    with zipfile.ZipFile(DEMO) as src, zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as dst:
        for info in src.infolist():
            data = src.read(info)
            if info.filename.endswith("models/decoder.json"):
                data = data.replace(b"decoder.transformer.h.0.attn",
                                    json.dumps(f"decoder.transformer.h.0.{HOSTILE}")[1:-1].encode())
            dst.writestr(info, data)
    return out


def test_svg_is_well_formed_and_escapes_the_files_text(tmp_path: Path) -> None:
    src = _hostile_archive(tmp_path)
    out = tmp_path / "block.svg"
    proc = cli(str(src), "--module", "decoder.transformer.h.0", "--depth", "2", "--svg", str(out))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(f"wrote {out}")
    root = ElementTree.parse(out).getroot()  # well-formed: the markup stayed text
    texts = [t.text or "" for t in root.iter("{http://www.w3.org/2000/svg}text")]
    assert any(HOSTILE in t for t in texts)
    assert not list(root.iter("attn"))  # no element made from the file's text
    assert "<attn" not in out.read_text()


def test_png(tmp_path: Path) -> None:
    out = tmp_path / "top.png"
    proc = cli(str(DEMO), "--depth", "2", "--png", str(out))
    assert proc.returncode == 0, proc.stderr
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize("case", ["suffix", "folder", "missing", "input", "module", "depth",
                                  "program", "subgraph"])
def test_errors_are_one_line_and_write_nothing(tmp_path: Path, case: str) -> None:
    args = {"suffix": ["--svg", str(tmp_path / "x.png")],
            "folder": ["--svg", str(tmp_path)],
            "missing": ["--svg", str(tmp_path / "nope" / "x.svg")],
            "module": ["--module", "decoder.nope", "--json"],
            "depth": ["--depth", "0", "--json"],
            "program": ["--program", "nope", "--json"],
            "subgraph": ["--graph", "nope", "--json"]}
    source = DEMO
    if case == "input":  # an archive named like the output: never overwritten
        source = tmp_path / "archive.svg"
        shutil.copy(DEMO, source)
        args["input"] = ["--svg", str(source)]
    before = sorted(p.name for p in tmp_path.iterdir())
    proc = cli(str(source), *args[case])
    assert proc.returncode == 2, (case, proc.stdout, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), proc.stderr
    assert proc.stdout == ""
    assert sorted(p.name for p in tmp_path.iterdir()) == before
    if case == "input":
        assert source.read_bytes() == DEMO.read_bytes()
