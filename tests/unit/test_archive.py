"""The safe reader on real archives and on small malformed ones."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import pytest

from inspector.core import archive as archive_mod
from inspector.core.archive import ArchiveError, open_archive


def _rewrite(src: Path, dst: Path, change) -> Path:
    """Copy an archive, letting `change(name, data)` return new bytes or None to drop."""
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w") as zout:
        for info in zin.infolist():
            data = change(info.filename, zin.read(info))
            if data is not None:
                zout.writestr(info.filename, data)
    return dst


def test_describes_every_record_and_flags_risk(small_archive: Path) -> None:
    with open_archive(small_archive) as a:
        assert a.layout == "pt2"
        assert a.archive_version == 0
        assert a.program_names == ["model"]
        kinds = {r.path: r.kind for r in a.records}
        assert kinds["models/model.json"] == archive_mod.PROGRAM
        assert kinds["data/weights/model_weights_config.json"] == archive_mod.WEIGHTS_CONFIG
        assert kinds["data/sample_inputs/model.pt"] == archive_mod.SAMPLE_INPUTS
        risky = {r.path for r in a.records if r.risk}
        assert risky == {"data/sample_inputs/model.pt"}
        weights = [r for r in a.records if r.kind == archive_mod.WEIGHT]
        assert len(weights) == 3 and all(r.size > 0 for r in weights)
        assert a.top == "small/"


def test_pickled_weight_is_flagged(small_archive: Path, tmp_path: Path) -> None:
    import orjson

    def change(name: str, data: bytes) -> bytes:
        if name.endswith("_weights_config.json"):
            doc = orjson.loads(data)
            first = next(iter(doc["config"].values()))
            first["use_pickle"] = True
            return orjson.dumps(doc)
        return data

    path = _rewrite(small_archive, tmp_path / "p.pt2", change)
    with open_archive(path) as a:
        pickled = [r for r in a.records if r.kind == archive_mod.PICKLED_WEIGHT]
        assert len(pickled) == 1 and pickled[0].risk
        assert "pickle" in pickled[0].why


@pytest.mark.parametrize(
    "content, message",
    [
        (b"", "empty"),
        (b"<html><body>404</body></html>", "not a zip file"),
        (b"\x80\x04\x95\x00\x00\x00\x00.", "not a zip file"),
    ],
)
def test_not_an_archive(tmp_path: Path, content: bytes, message: str) -> None:
    path = tmp_path / "f.pt2"
    path.write_bytes(content)
    with pytest.raises(ArchiveError, match=message):
        open_archive(path)


def test_zip_without_archive_format(tmp_path: Path) -> None:
    path = tmp_path / "f.pt2"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("hello.txt", "hi")
    with pytest.raises(ArchiveError, match="not a .pt2 archive"):
        open_archive(path)


def test_newer_archive_version_is_refused(small_archive: Path, tmp_path: Path) -> None:
    path = _rewrite(small_archive, tmp_path / "v.pt2",
                    lambda n, d: b"99" if n.endswith("/archive_version") else d)
    with pytest.raises(ArchiveError, match="archive_version 99 is newer"):
        open_archive(path)


def test_wrong_archive_format(small_archive: Path, tmp_path: Path) -> None:
    path = _rewrite(small_archive, tmp_path / "f.pt2",
                    lambda n, d: b"zip" if n.endswith("/archive_format") else d)
    with pytest.raises(ArchiveError, match="archive_format is 'zip'"):
        open_archive(path)


def test_no_programs(small_archive: Path, tmp_path: Path) -> None:
    path = _rewrite(small_archive, tmp_path / "n.pt2",
                    lambda n, d: None if "/models/" in n else d)
    with pytest.raises(ArchiveError, match="no programs"):
        open_archive(path)


def test_escaping_names_are_refused(small_archive: Path, tmp_path: Path) -> None:
    path = tmp_path / "e.pt2"
    path.write_bytes(small_archive.read_bytes())
    with zipfile.ZipFile(path, "a") as z:
        z.writestr("../../etc/evil", "x")
    with pytest.raises(ArchiveError, match="escapes the archive"):
        open_archive(path)


def test_duplicate_names_are_refused(small_archive: Path, tmp_path: Path) -> None:
    path = tmp_path / "d.pt2"
    path.write_bytes(small_archive.read_bytes())
    with pytest.warns(UserWarning), zipfile.ZipFile(path, "a") as z:
        z.writestr("small/models/model.json", "{}")
    with pytest.raises(ArchiveError, match="two entries named"):
        open_archive(path)


def test_json_read_is_bounded_whatever_the_header_says(small_archive: Path, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    # A record that inflates past the limit is refused while streaming.
    bomb = b"[" + b"0," * 400_000 + b"0]"
    path = tmp_path / "b.pt2"
    with zipfile.ZipFile(small_archive) as zin, zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zout:
        for info in zin.infolist():
            data = bomb if info.filename.endswith("models/model.json") else zin.read(info)
            zout.writestr(info.filename, data)
    monkeypatch.setattr(archive_mod, "MAX_JSON_BYTES", 100_000)
    with open_archive(path) as a:
        with pytest.raises(ArchiveError, match="over the limit"):
            a.read_json("models/model.json", limit=archive_mod.MAX_JSON_BYTES)


def test_invalid_json_names_the_record(small_archive: Path, tmp_path: Path) -> None:
    path = _rewrite(small_archive, tmp_path / "j.pt2",
                    lambda n, d: b"{not json" if n.endswith("models/model.json") else d)
    with open_archive(path) as a, pytest.raises(ArchiveError, match="models/model.json is not valid JSON"):
        a.program("model")


def test_opening_reads_no_weight_bytes(small_archive: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Describing an archive must not decode weights or pickles: only small
    metadata/config records are read."""
    read: list[str] = []
    original = archive_mod.Archive.read_bytes

    def spy(self, rel: str, limit: int) -> bytes:
        read.append(rel)
        return original(self, rel, limit)

    monkeypatch.setattr(archive_mod.Archive, "read_bytes", spy)
    with open_archive(small_archive) as a:
        a.program("model")
    assert all(not r.startswith(("data/weights/weight_", "data/sample_inputs/")) for r in read), read


def test_legacy_layout_is_recognised(tmp_path: Path, small_archive: Path) -> None:
    """torch <= 2.5 wrote serialized_exported_program.json + pickles."""
    with zipfile.ZipFile(small_archive) as z:
        program = next(z.read(n) for n in z.namelist() if n.endswith("models/model.json"))
    path = tmp_path / "legacy.pt2"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("legacy/serialized_exported_program.json", program)
        z.writestr("legacy/serialized_state_dict.pt", b"\x80\x02}q\x00.")
        z.writestr("legacy/version", "1")
    with open_archive(path) as a:
        assert a.layout == "legacy"
        assert a.program_names == ["model"]
        assert a.program("model").node_count > 0
        assert [r.path for r in a.records if r.risk] == ["serialized_state_dict.pt"]


def _copy_renaming(src: Path, dst: Path, rename) -> Path:
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w") as zout:
        for info in zin.infolist():
            zout.writestr(rename(info.filename), zin.read(info))
    return dst


def test_names_are_found_and_classified_case_insensitively(small_archive: Path,
                                                           tmp_path: Path) -> None:
    """As torch's zip reader finds them: `OPAQUE_OBJ_0` is an opaque object."""
    def rename(name: str) -> str:
        return name.replace("_weights_config.json", "_WEIGHTS_CONFIG.json")

    path = _copy_renaming(small_archive, tmp_path / "c.pt2", rename)
    with zipfile.ZipFile(path, "a") as z:
        z.writestr("small/data/constants/OPAQUE_OBJ_0", b"x")
        z.writestr("small/DATA/SAMPLE_INPUTS/other.pt", b"x")
    with open_archive(path) as a:
        kinds = {r.path: (r.kind, r.risk) for r in a.records}
        assert kinds["data/constants/OPAQUE_OBJ_0"] == (archive_mod.OPAQUE_OBJECT, True)
        assert kinds["DATA/SAMPLE_INPUTS/other.pt"] == (archive_mod.SAMPLE_INPUTS, True)
        assert kinds["data/weights/model_WEIGHTS_CONFIG.json"][0] == archive_mod.WEIGHTS_CONFIG
        assert a.has("data/weights/model_weights_config.json")
        assert a.payload_config("model", "weights")  # found under its other spelling
        assert a.entry_name("data/weights/model_weights_config.json").endswith("_WEIGHTS_CONFIG.json")


@pytest.mark.parametrize("rename, message", [
    (lambda n: n.replace("small/models/", "SMALL/models/"), "outside its top folder"),
    (lambda n: "other/" + n if n.endswith("byteorder") else n, "outside its top folder"),
])
def test_entries_outside_the_first_entrys_folder_are_refused(small_archive: Path, tmp_path: Path,
                                                             rename, message: str) -> None:
    path = _copy_renaming(small_archive, tmp_path / "t.pt2", rename)
    with pytest.raises(ArchiveError, match=message):
        open_archive(path)


def test_case_variant_names_are_refused(small_archive: Path, tmp_path: Path) -> None:
    path = _copy_renaming(small_archive, tmp_path / "v.pt2", lambda n: n)
    with zipfile.ZipFile(path, "a") as z:
        z.writestr("small/MODELS/model.json", b"{}")
    with pytest.raises(ArchiveError, match="differ only by case"):
        open_archive(path)


def test_retarget_rewrites_a_config_stored_under_another_case(small_archive: Path,
                                                              tmp_path: Path) -> None:
    from inspector.core.retarget import retarget

    path = _copy_renaming(small_archive, tmp_path / "u.pt2",
                          lambda n: n.replace("_weights_config.json", "_Weights_Config.json"))
    retarget(path, tmp_path / "out.pt2", "meta")
    with zipfile.ZipFile(tmp_path / "out.pt2") as z:
        names = z.namelist()
        config = z.read(next(n for n in names if n.endswith("_Weights_Config.json")))
    assert sum(n.lower().endswith("_weights_config.json") for n in names) == 1
    assert b'"meta"' in config and b'"cpu"' not in config


def test_a_program_too_big_to_read_whole_is_named_so(small_archive: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    # a genuine program between the whole-read limit (run, check, profile,
    # retarget) and the lean parse's (info, list, audit, the window) is listed,
    # and the readers that decode it whole say what it is, not "past a limit"
    from inspector.core.listing import render_listing
    from inspector.jobs import load

    with open_archive(small_archive) as a:
        size = a._entry(a.program_path("model")).file_size
    monkeypatch.setattr(archive_mod, "MAX_JSON_BYTES", size - 1)
    with open_archive(small_archive) as a:
        assert render_listing(a.program("model")).lines
        with pytest.raises(ArchiveError, match=r"program 'model' is 0 MiB of JSON: running, "
                                               r"checking, profiling or retargeting .* info, list, "
                                               r"audit and the window read programs up to 1024 MiB"):
            a.program_json("model")
    with pytest.raises(ArchiveError, match="running, checking, profiling or retargeting"):
        load.vet(small_archive, programs=["model"])
