"""Frame sources on this machine (issue 16, item 3): core/sources.py and `node`.

A tiny HuggingFace GPT-2, wrapped by a module defined in this file, is exported
here; its nodes' stack traces hold a user frame (this file), transformers
frames and torch frames, all with this machine's absolute paths. Copies of the
archive with those paths rewritten stand for archives exported on another
machine: another venv prefix, torch's relative paths, a user's project folder.
Expected files come from the packages themselves (`transformers.__file__`,
`torch.__file__`) and expected users and modules from torch's own loaded graph.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest
from archive_factory import ArchiveFactory

from inspector.core.sources import PathMapping, SourceMapError, SourceResolver, check_line

REPO = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve()
ELSEWHERE_SITE = "/home/elsewhere/.venv/lib/python3.10/site-packages/"
ALICE = "/home/alice/proj"


def _tiny_gpt2() -> object:
    import torch
    import transformers as tf

    class TinyLM(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            cfg = tf.GPT2Config(vocab_size=97, n_embd=32, n_layer=1, n_head=2, n_positions=64,
                                use_cache=False)
            self.gpt = tf.GPT2Model(cfg)

        def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
            hidden = self.gpt(input_ids=input_ids).last_hidden_state  # the user's own line
            return hidden

    torch.manual_seed(0)
    model = TinyLM().eval()
    ids = torch.randint(0, 90, (2, 8))
    with torch.no_grad():
        return torch.export.export(model, (ids,), dynamic_shapes=(
            {1: torch.export.Dim("seq", min=2, max=64)},))


@pytest.fixture(scope="module")
def gpt2_pt2(archive_factory: ArchiveFactory) -> Path:
    pytest.importorskip("transformers")
    return archive_factory.save("sources/gpt2", _tiny_gpt2)


def _site_root() -> str:
    import transformers

    return str(Path(transformers.__file__).resolve().parents[1]) + "/"


def _rewrite(src: Path, dst: Path, replace: list[tuple[str, str]]) -> Path:
    """A copy whose program JSON has each old text replaced (stack traces, ...)."""
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w") as zout:
        for info in zin.infolist():
            data = zin.read(info.filename)
            if "/models/" in info.filename and info.filename.endswith(".json"):
                text = data.decode()
                for old, new in replace:
                    assert old in text, f"{old!r} is not in the recorded paths"
                    text = text.replace(old, new)
                data = text.encode()
            zout.writestr(info, data)
    return dst


def _node_json(path: Path, name: str, *extra: str) -> dict[str, Any]:
    proc = subprocess.run([sys.executable, "-m", "inspector", "node", str(path), name, "--json",
                           *extra], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def _embedding_node(path: Path) -> str:
    """The token embedding: frames in this file, in transformers and in torch."""
    import torch

    ep = torch.export.load(str(path))
    return next(n.name for n in ep.graph.nodes if n.target == torch.ops.aten.embedding.default)


def _frames_by_kind(report: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {"user": [], "transformers": [], "torch": []}
    for f in report["frames"]:
        if "transformers/" in f["file"]:
            out["transformers"].append(f)
        elif f["file"].startswith("torch/") or "/torch/" in f["file"]:
            out["torch"].append(f)
        elif f["user"]:
            out["user"].append(f)
    return out


def test_node_reports_what_torch_says(gpt2_pt2: Path) -> None:
    """Statement, module, users and frames, against torch's loaded graph."""
    import torch

    ep = torch.export.load(str(gpt2_pt2))
    name = _embedding_node(gpt2_pt2)
    node = next(n for n in ep.graph.nodes if n.name == name)
    report = _node_json(gpt2_pt2, name)
    assert report["name"] == name and report["target"] == "torch.ops.aten.embedding.default"
    # the statement is the listing's line for it, as `list` prints it
    listing = subprocess.run([sys.executable, "-m", "inspector", "list", str(gpt2_pt2)],
                             capture_output=True, text=True, timeout=120,
                             env={**os.environ, "PYTHONPATH": str(REPO)}).stdout.splitlines()
    assert listing[report["listing_line"]].strip() == report["statement"]  # 1-based + header
    assert report["statement"].startswith(f"{name}: ")
    assert {u["name"] for u in report["users"]} == {u.name for u in node.users}
    for user in report["users"]:
        assert listing[user["line"]].strip().startswith(f"{user['name']}")
    torch_module = list(node.meta["nn_module_stack"].values())[-1][0]
    assert report["module"] == torch_module  # e.g. gpt.wte
    # frames: what torch recorded, each with its code line, found here as recorded
    recorded = node.meta["stack_trace"]
    assert len(report["frames"]) == recorded.count('File "')
    kinds = _frames_by_kind(report)
    assert kinds["user"] and kinds["transformers"] and kinds["torch"], report["frames"]
    for f in report["frames"]:
        assert f'File "{f["file"]}", line {f["line"]}, in {f["function"]}' in recorded
        assert set(f) >= {"file", "line", "function", "code", "user", "local"}
        assert f["local"] == f["file"] and f["local_check"] == "same", f
    assert kinds["user"][-1]["file"] == str(HERE)
    assert "the user's own line" in kinds["user"][-1]["code"]


def test_another_machines_site_packages_resolve_to_the_installed_packages(
        gpt2_pt2: Path, tmp_path: Path) -> None:
    import torch
    import transformers

    moved = _rewrite(gpt2_pt2, tmp_path / "elsewhere.pt2", [(_site_root(), ELSEWHERE_SITE)])
    report = _node_json(moved, _embedding_node(gpt2_pt2))
    kinds = _frames_by_kind(report)
    tf_root = Path(transformers.__file__).parent
    torch_root = Path(torch.__file__).parent
    for f in kinds["transformers"]:
        assert f["file"].startswith(ELSEWHERE_SITE + "transformers/")
        rel = f["file"][len(ELSEWHERE_SITE + "transformers/"):]
        assert f["local"] == str(tf_root / rel) and f["local_check"] == "same", f
    for f in kinds["torch"]:
        rel = f["file"][len(ELSEWHERE_SITE + "torch/"):]
        assert f["local"] == str(torch_root / rel) and f["local_check"] == "same", f


def test_relative_torch_paths_resolve(gpt2_pt2: Path, tmp_path: Path) -> None:
    import torch

    rel = _rewrite(gpt2_pt2, tmp_path / "relative.pt2", [(_site_root() + "torch/", "torch/")])
    report = _node_json(rel, _embedding_node(gpt2_pt2))
    frames = _frames_by_kind(report)["torch"]
    assert frames and all(f["file"].startswith("torch/") for f in frames)
    for f in frames:
        assert f["local"] == str(Path(torch.__file__).parent / f["file"][len("torch/"):])
        assert f["local_check"] == "same"


def test_user_files_need_a_mapping_and_follow_it(gpt2_pt2: Path, tmp_path: Path) -> None:
    moved = _rewrite(gpt2_pt2, tmp_path / "alice.pt2", [(str(REPO), ALICE)])
    name = _embedding_node(gpt2_pt2)
    user = _frames_by_kind(_node_json(moved, name))["user"][-1]
    assert user["file"] == f"{ALICE}/tests/unit/test_sources.py" and user["local"] is None
    mapped = _frames_by_kind(_node_json(moved, name, "--map", f"{ALICE}={REPO}"))["user"][-1]
    assert mapped["local"] == str(HERE) and mapped["local_check"] == "same"


def test_another_version_of_the_file_is_said_and_the_line_looked_for(
        gpt2_pt2: Path, tmp_path: Path) -> None:
    moved = _rewrite(gpt2_pt2, tmp_path / "alice.pt2", [(str(REPO), ALICE)])
    name = _embedding_node(gpt2_pt2)
    # the project here has three more lines at the top of this file...
    checkout = tmp_path / "checkout"
    (checkout / "tests" / "unit").mkdir(parents=True)
    copy = checkout / "tests" / "unit" / "test_sources.py"
    copy.write_text("# one\n# two\n# three\n" + HERE.read_text())
    user = _frames_by_kind(_node_json(moved, name, "--map", f"{ALICE}={checkout}"))["user"][-1]
    assert user["local"] == str(copy)
    assert user["local_check"] == "moved" and user["local_line"] == user["line"] + 3
    # ...or that line was changed
    lines = HERE.read_text().splitlines()
    lines[user["line"] - 1] = "        hidden = None  # changed since the export"
    copy.write_text("\n".join(lines) + "\n")
    user = _frames_by_kind(_node_json(moved, name, "--map", f"{ALICE}={checkout}"))["user"][-1]
    assert user["local_check"] == "differs" and user["local_line"] == user["line"]
    assert user["local_code"] == "hidden = None  # changed since the export"
    # and the text output says so
    proc = subprocess.run([sys.executable, "-m", "inspector", "node", str(moved), name,
                           "--map", f"{ALICE}={checkout}"], capture_output=True, text=True,
                          timeout=120, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert proc.returncode == 0, proc.stderr
    assert f"local: {copy} (the local line differs: another version)" in proc.stdout
    assert "local line: hidden = None  # changed since the export" in proc.stdout


def test_bad_names_and_mappings_are_one_error_line(gpt2_pt2: Path, tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    for args, needle in ((["no_such_node"], "error: no node 'no_such_node' in program 'model'"),
                         (["embedding", "--map", "nothing"], "error: bad path mapping 'nothing'"),
                         (["embedding", "--program", "nope"], "error: ")):
        proc = subprocess.run([sys.executable, "-m", "inspector", "node", str(gpt2_pt2), *args],
                              capture_output=True, text=True, timeout=120, env=env, cwd=tmp_path)
        assert proc.returncode == 2, (args, proc.stdout, proc.stderr)
        assert len(proc.stderr.splitlines()) == 1 and proc.stderr.startswith(needle), proc.stderr


# --- the resolver on its own ------------------------------------------------------------


def test_resolver_order_and_refusals(tmp_path: Path) -> None:
    import json as json_module  # a stdlib module, located without importing anything new

    stdlib = Path(json_module.__file__).parent.parent
    project = tmp_path / "proj"
    (project / "sub").mkdir(parents=True)
    (project / "sub" / "m.py").write_text("x = 1\n")
    inner = tmp_path / "inner"
    inner.mkdir()
    (inner / "m.py").write_text("x = 2\n")
    r = SourceResolver([PathMapping("/rec/proj", str(project)),
                        PathMapping("/rec/proj/sub", str(inner))])
    assert r.resolve("/rec/proj/sub/m.py") == str(inner / "m.py")  # longest prefix wins
    assert r.resolve("/rec/projX/sub/m.py") is None  # a prefix is whole folders
    assert r.resolve("/usr/lib/python3.9/json/decoder.py") == str(stdlib / "json" / "decoder.py")
    assert r.resolve("<frozen importlib._bootstrap>") is None
    assert r.resolve("/x/site-packages/../../etc/passwd") is None
    assert r.resolve("/x/site-packages/not a name/f.py") is None
    assert r.resolve("/x/site-packages/pt2i_no_such_pkg/f.py") is None
    assert r.resolve("/proc/kmsg") is None and r.resolve("/proc/self/status") is None
    with pytest.raises(SourceMapError, match="not a folder here"):
        PathMapping.parse(f"/rec={tmp_path / 'missing'}")


def test_check_line_looks_a_few_lines_around(tmp_path: Path) -> None:
    f = tmp_path / "f.py"
    f.write_text("\n".join(f"line{i}" for i in range(1, 41)) + "\n")
    assert check_line(str(f), 10, "line10").status == "same"
    moved = check_line(str(f), 10, "line16")
    assert (moved.status, moved.line) == ("moved", 16)
    assert check_line(str(f), 10, "line30").status == "differs"  # beyond NEARBY_LINES
    assert check_line(str(f), 10, "").status == "unchecked"
    assert check_line(str(tmp_path / "gone.py"), 1, "x").status == "unchecked"
    # a trace naming a pseudo-file is never read (/proc/kmsg would block)
    link = tmp_path / "kmsg.py"
    link.symlink_to("/proc/self/status")
    assert check_line(str(link), 1, "Name:").status == "unchecked"
    assert check_line("/proc/self/status", 1, "Name:").status == "unchecked"
