"""The last faults of issue 27 ("The other faults found"), through the real CLI.

- `node` read and printed any local file a frame named (/etc/passwd, a .txt, a
  `.py` link to a key file): it now follows the window's rule, one function in
  core (sources.source_file);
- a recorded line number of 2**64 showed as `:0`;
- `report -o` trusted its output path (the input archive, a FIFO, a device, a
  symlink), left `.NAME.HEX.tmp` behind when SIGKILLed, and allowed inline scripts;
- a deflate bomb weight was inflated whole before its size was checked.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from hostile_corpus import Base, _walk_program

REPO = Path(__file__).resolve().parents[2]


def _cli(args: list[str], cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.pop("PT2I_DEBUG", None)
    return subprocess.run([sys.executable, "-m", "inspector", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL)


def _one_error_line(done: subprocess.CompletedProcess[str], *needles: str) -> str:
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2, (done.returncode, done.stdout[-500:], done.stderr)
    assert len(lines) == 1 and lines[0].startswith("error: "), lines
    assert "internal error" not in lines[0] and "Traceback" not in done.stderr, lines
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    return lines[0]


def _with_trace(base: Base, out: Path, trace: str) -> tuple[Path, str]:
    """The base archive with `trace` as every node's stack trace; returns it and
    the name of a node that carries it."""
    doc = base.json()
    nodes = _walk_program(doc)["nodes"]
    for node in nodes:
        node["metadata"]["stack_trace"] = trace
    name = next(o["as_tensor"]["name"] for n in nodes for o in n["outputs"] if "as_tensor" in o)
    out.write_bytes(base.with_program(doc))
    return out, name


# --------------------------------------------------------------- node: local files


SECRET = "SECRET-TOKEN-6f1e"


def _local_files(tmp: Path) -> dict[str, str]:
    """Files a frame may name, and whether their text may be shown."""
    (tmp / "notes.txt").write_text(f"{SECRET} notes\n")
    (tmp / "key").write_text(f"{SECRET} key\n")
    (tmp / "link.py").symlink_to(tmp / "key")  # a .py name, a key file behind it
    (tmp / "model.py").write_text("y = torch.relu(x)\n")
    (tmp / "lib.py").symlink_to(tmp / "model.py")  # a link to Python source: fine
    os.mkfifo(tmp / "pipe.py")  # opening it would block forever
    return {"/etc/passwd": "refused", str(tmp / "notes.txt"): "refused",
            str(tmp / "link.py"): "refused", str(tmp / "pipe.py"): "refused",
            str(tmp / "model.py"): "shown", str(tmp / "lib.py"): "shown"}


def test_node_shows_only_python_sources(base: Base, tmp_path: Path) -> None:
    files = _local_files(tmp_path)
    trace = "".join(f'File "{f}", line 1, in forward\n    y = self.lin(x)\n' for f in files)
    path, name = _with_trace(base, tmp_path / "frames.pt2", trace)
    text = _cli(["node", str(path), name], tmp_path, timeout=60)
    assert text.returncode == 0, text.stderr
    assert SECRET not in text.stdout
    assert "root:" not in text.stdout  # /etc/passwd's first line
    # refused files are said to be refused, not missing
    assert text.stdout.count("local: not shown: only Python source files") == 4, text.stdout
    done = _cli(["node", str(path), name, "--json"], tmp_path, timeout=60)
    assert done.returncode == 0, done.stderr
    frames = json.loads(done.stdout)["frames"]
    assert [f["file"] for f in frames] == list(files)
    for f in frames:
        if files[f["file"]] == "refused":
            assert f["local"] is None, f
        else:  # a real source still shows, its line checked (the rule is not "nothing")
            assert f["local"] == f["file"] and f["local_check"] == "differs", f
            assert f["local_code"] == "y = torch.relu(x)"
    assert SECRET not in done.stdout and "root:" not in done.stdout


def test_window_and_node_follow_one_rule(tmp_path: Path) -> None:
    """The Source pane reads exactly what `node` may read (one function in core)."""
    pytest.importorskip("PySide6")
    from inspector.core.sources import source_file, source_lines
    from inspector.ui.widgets.source_pane import read_source

    for path, verdict in _local_files(tmp_path).items():
        allowed = verdict == "shown"
        assert (source_file(path) is not None) is allowed, path
        assert (source_lines(path) is not None) is allowed, path
        assert (read_source(path) is not None) is allowed, path
    big = tmp_path / "big.py"
    with open(big, "wb") as fp:  # over the size cap: neither reads it
        fp.truncate(8 * 1024 * 1024 + 1)
    assert source_file(str(big)) is None and read_source(str(big)) is None


# --------------------------------------------------------------- line 2**64


def test_an_unreal_line_number_shows_as_recorded(base: Base, tmp_path: Path) -> None:
    huge = str(2**64)
    path, name = _with_trace(base, tmp_path / "lines.pt2",
                             f'File "/home/u/model.py", line {huge}, in forward\n    y = self.lin(x)\n')
    done = _cli(["node", str(path), name], tmp_path, timeout=60)
    assert done.returncode == 0, done.stderr
    assert f"/home/u/model.py:{huge} in forward" in done.stdout
    assert "model.py:0 " not in done.stdout
    js = _cli(["node", str(path), name, "--json"], tmp_path, timeout=60)
    frame = json.loads(js.stdout)["frames"][0]
    assert frame["line_text"] == huge and frame["line"] == 0  # 0: unknown, for arithmetic


def test_line_text_of_recorded_numbers() -> None:
    from inspector.core.frames import parse_stack_trace

    def first(digits: str):
        return parse_stack_trace(f'File "/u/m.py", line {digits}, in f\n    y = 1')[0]

    assert first("42").line_text == "42" and first("42").location == "/u/m.py:42"
    assert first(str(2**64)).line_text == str(2**64)
    assert first("0" * 3000 + "7").line == 7  # leading zeros are not digits of the number
    long = first("9" * 5000).line_text
    assert long.startswith("9999") and "5,000 digits" in long and len(long) < 60


# --------------------------------------------------------------- output paths

def _victims(tmp: Path, archive: Path, kind: str) -> tuple[Path, object]:
    """An output path of `kind`, and a snapshot to compare after the command."""
    import stat as st

    if kind == "input":
        return archive, archive.read_bytes()
    if kind == "hard-link-to-input":
        out = tmp / "alias.pt2"
        os.link(archive, out)
        return out, archive.read_bytes()
    if kind == "fifo":
        out = tmp / "pipe.pt2"
        os.mkfifo(out)
        return out, "fifo"
    if kind == "symlink":
        victim = tmp / "victim.txt"
        victim.write_text("keep me")
        out = tmp / "link.pt2"
        out.symlink_to(victim)
        return out, "symlink"
    if kind == "chardev":
        out = tmp / "null.pt2"
        try:  # our own /dev/null twin: never the real one where we could replace it
            os.mknod(out, st.S_IFCHR | 0o666, os.makedev(1, 3))
        except PermissionError:
            # no CAP_MKNOD, hence no right to replace anything in /dev either: the
            # real one is safe to aim at (the rule must still refuse it by its kind)
            out = Path("/dev/null")
        return out, "chardev"
    raise AssertionError(kind)


def _unchanged(out: Path, snapshot: object, archive: Path) -> None:
    import stat as st

    mode = os.lstat(out).st_mode
    if isinstance(snapshot, bytes):
        assert st.S_ISREG(mode) and archive.read_bytes() == snapshot, "the input was replaced"
    elif snapshot == "fifo":
        assert st.S_ISFIFO(mode), "the FIFO was replaced by a file"
    elif snapshot == "symlink":
        assert st.S_ISLNK(mode) and (out.parent / "victim.txt").read_text() == "keep me"
    elif snapshot == "chardev":
        assert st.S_ISCHR(mode), "the device node was replaced by a file"


OUTPUT_KINDS = ["input", "hard-link-to-input", "fifo", "symlink", "chardev"]


# export reads no file: it has no input to protect
WRITERS = [(c, k) for c in ("report", "retarget", "export") for k in OUTPUT_KINDS
           if not (c == "export" and "input" in k)]


@pytest.mark.parametrize(("command", "kind"), WRITERS, ids=[f"{c}-{k}" for c, k in WRITERS])
def test_writers_refuse_outputs_they_must_not_replace(base_archive: Path, tmp_path: Path,
                                                      command: str, kind: str) -> None:
    """One rule for every command that writes (core/atomic.check_output_path)."""
    archive = tmp_path / "A.pt2"
    archive.write_bytes(base_archive.read_bytes())
    out, snapshot = _victims(tmp_path, archive, kind)
    argv = {"report": ["report", str(archive), "-o", str(out)],
            "retarget": ["retarget", str(archive), "--device", "cuda", "-o", str(out)],
            "export": ["export", "--preset", "tiny", "-o", str(out)]}[command]
    before = sorted(p.name for p in tmp_path.iterdir())
    line = _one_error_line(_cli(argv, tmp_path, timeout=600))
    assert str(out) in line, line
    _unchanged(out, snapshot, archive)
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # nothing else written


def test_report_refuses_its_profile_as_output(base_archive: Path, tmp_path: Path) -> None:
    profile = tmp_path / "profile.json"
    profile.write_text('{"programs": []}')
    _one_error_line(_cli(["report", str(base_archive), "-o", str(profile), "--profile",
                          str(profile)], tmp_path), "input")
    assert profile.read_text() == '{"programs": []}'


# --------------------------------------------------------------- report under SIGKILL

# A real `report` child, held inside its final fsync (the moment the page is fully
# written and not yet renamed) so the SIGKILL lands there every time, not by luck.
_HELD_AT_FSYNC = r"""
import os, runpy, sys, time
def held(fd):
    sys.stdout.write("in fsync\n"); sys.stdout.flush(); time.sleep(600)
os.fsync = held
sys.argv = ["pt2-inspector", *sys.argv[1:]]
runpy.run_module("inspector", run_name="__main__")
"""


def test_report_killed_while_writing_leaves_nothing(base_archive: Path, tmp_path: Path) -> None:
    import signal

    out_dir = tmp_path / "out"
    out_dir.mkdir()
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.Popen([sys.executable, "-c", _HELD_AT_FSYNC, "report", str(base_archive),
                             "-o", str(out_dir / "out.html")], cwd=tmp_path, env=env,
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line == b"in fsync\n", (line, proc.stderr.read() if proc.poll() is not None else "")
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == -signal.SIGKILL
    assert sorted(p.name for p in out_dir.iterdir()) == []  # no .out.html.HEX.tmp
    done = _cli(["report", str(base_archive), "-o", str(out_dir / "out.html")], tmp_path)
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in out_dir.iterdir()) == ["out.html"]


# --------------------------------------------------------------- report's CSP


def _report(base_archive: Path, tmp: Path) -> str:
    out = tmp / "r.html"
    done = _cli(["report", str(base_archive), "-o", str(out)], tmp)
    assert done.returncode == 0, done.stderr
    return out.read_text()


def test_report_csp_allows_only_its_own_script(base_archive: Path, tmp_path: Path) -> None:
    import base64
    import hashlib
    import html.parser

    text = _report(base_archive, tmp_path)

    class Page(html.parser.HTMLParser):
        csp = ""
        scripts: list[str] = []
        _in = False

        def handle_starttag(self, tag, attrs):
            a = dict(attrs)
            if tag == "meta" and (a.get("http-equiv") or "").lower() == "content-security-policy":
                self.csp = a["content"]
            self._in = tag == "script"
            if self._in:
                self.scripts.append("")

        def handle_endtag(self, tag):
            self._in = False

        def handle_data(self, data):
            if self._in:
                self.scripts[-1] += data

    page = Page(convert_charrefs=False)
    page.feed(text)
    directives = dict((d.strip().split(" ", 1) + [""])[:2] for d in page.csp.split(";") if d.strip())
    assert len(page.scripts) == 1, page.scripts
    digest = base64.b64encode(hashlib.sha256(page.scripts[0].encode()).digest()).decode()
    assert directives["script-src"] == f"'sha256-{digest}'", directives
    assert "unsafe" not in directives["script-src"] and directives["default-src"] == "'none'"


CHROMIUM = __import__("shutil").which("chromium") or __import__("shutil").which("chromium-browser")


@pytest.mark.skipif(CHROMIUM is None, reason="headless Chromium not installed (apt-get install -y chromium)")
def test_chromium_runs_the_page_script_and_no_injected_one(base_archive: Path, tmp_path: Path) -> None:
    """In a browser: the page's own script still runs under the CSP (a link into a
    folded source comment opens it), a script that slipped into the page does not."""
    import re

    text = _report(base_archive, tmp_path)
    at = text.index("<details class=src>")
    anchor = re.findall(r'<span id="(p\d+-L\d+)"', text[:at])[-1]
    injected = tmp_path / "injected.html"
    injected.write_text(text.replace(
        "<body>", "<body><script>document.title='PWNED-script'</script>"
                  "<img src=data:, onerror=\"document.title='PWNED-handler'\">", 1))

    def dom(path: Path, fragment: str = "") -> str:
        argv = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                f"--user-data-dir={tmp_path / 'profile'}", "--virtual-time-budget=3000",
                "--dump-dom", path.as_uri() + fragment]
        done = subprocess.run(argv, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr[-2000:]
        return done.stdout

    shown = dom(injected, "#" + anchor)
    assert "PWNED" not in shown.split("</title>")[0], "an injected script ran"
    span = shown[shown.index(f'id="{anchor}"'):]
    assert span.split("</details>")[0].count("<details class=\"src\" open") == 1, \
        "the page's own script did not run (the folded comment stayed closed)"


# --------------------------------------------------------------- weight deflate bomb

BOMB_MIB = 4000  # raw_entry_zip writes no zip64: just under 4 GiB (the was 5 GB)


@pytest.fixture(scope="module")
def weight_bomb(base: Base, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """lin.weight as 4000 MiB of zeros deflated to ~4 MB, its config declaring a
    tensor of exactly that size (so the bytes are all needed), the CRC true: a
    file torch.export.load would inflate whole."""
    import zlib

    import orjson

    import zipcraft
    from hostile_corpus import WEIGHTS_CONFIG

    chunk = bytes(1 << 20)
    payload = zipcraft.deflate_repeated(chunk, BOMB_MIB)
    crc = zipcraft.crc_repeated(chunk, BOMB_MIB)
    config = base.json(WEIGHTS_CONFIG)
    meta = config["config"]["lin.weight"]["tensor_meta"]
    rows = BOMB_MIB * (1 << 20) // 4 // 1024
    meta["sizes"] = [{"as_int": rows}, {"as_int": 1024}]
    meta["strides"] = [{"as_int": 1024}, {"as_int": 1}]
    weight = "data/weights/" + config["config"]["lin.weight"]["path_name"]
    entries = []
    for rel, data in base.entries:
        if rel == weight:
            entries.append((base.top + rel, payload, 8, crc, BOMB_MIB << 20))
            continue
        if rel == WEIGHTS_CONFIG:
            data = orjson.dumps(config)
        entries.append((base.top + rel, data, 0, zlib.crc32(data), len(data)))
    path = tmp_path_factory.mktemp("bomb") / "bomb.pt2"
    path.write_bytes(zipcraft.raw_entry_zip(entries))
    assert path.stat().st_size < 8 << 20
    return path


def _cpu_bounded(args: list[str], cwd: Path, cpu_s: int = 60) -> subprocess.CompletedProcess[str]:
    """The CLI with a CPU-time rlimit, so the old behaviour (minutes of inflating)
    ends in SIGXCPU instead of holding the shared machine."""
    import resource

    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, "-m", "inspector", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL,
                          preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_CPU, (cpu_s, cpu_s)))


def test_weights_and_report_refuse_a_weight_bomb_before_inflating(weight_bomb: Path,
                                                                    tmp_path: Path) -> None:
    done = _cpu_bounded(["weights", str(weight_bomb), "--json"], tmp_path)
    assert done.returncode == 0, (done.returncode, done.stderr[-1000:])
    rows = {w["name"]: w for w in json.loads(done.stdout)["programs"][0]["weights"]}
    bomb = rows["lin.weight"]
    assert bomb["stats"] is None and "zip bomb" in bomb["note"], bomb
    assert f"{BOMB_MIB << 20:,} bytes" in bomb["note"], bomb["note"]
    assert rows["lin.bias"]["stats"] is not None  # the rest is still read
    out = tmp_path / "r.html"
    done = _cpu_bounded(["report", str(weight_bomb), "-o", str(out)], tmp_path)
    assert done.returncode == 0, (done.returncode, done.stderr[-1000:])
    assert "zip bomb" in out.read_text()


def test_the_loader_check_names_the_bomb(weight_bomb: Path, base_archive: Path) -> None:
    """`refuse_bombs` is what a loader calls before torch.export.load (sizes only)."""
    import zipfile

    from inspector.core.inflation import InflationError, refuse_bombs

    with zipfile.ZipFile(base_archive) as zf:
        refuse_bombs(zf.infolist())  # a real export: nothing to refuse
    with zipfile.ZipFile(weight_bomb) as zf, pytest.raises(InflationError, match="zip bomb"):
        refuse_bombs(zf.infolist())
