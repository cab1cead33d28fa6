"""Weight statistics from the raw records (core/weights.py, weight_stats.py, `weights` CLI)
against what torch itself says about the same archive after loading it.

Reference values come from torch on the program torch.export.load (or load_pt2)
returns: min/max/mean/std of the finite values (torch's own `Tensor.std()`,
Bessel-corrected), `isnan`/`isinf`/`== 0` counts. Archives: the fidelity corpus's
real models (custom modules, tiny HF models, ExportDB), a dtype zoo (fp32, fp16,
bf16, fp64, float8 e4m3fn/e5m2, int8, int64, bool, complex64), views that share a
storage, transposed and strided weights, NaN/Inf, buffers (persistent or not) and
constants; then the same records compressed, big-endian, and configs that lie.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import warnings
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from archive_factory import ArchiveFactory

sys.path.insert(0, str(Path(__file__).parent))

from inspector.core.archive import open_archive  # noqa: E402
from inspector.core.weight_dtypes import FLOAT8, float8_table  # noqa: E402
from inspector.core.weight_stats import (  # noqa: E402
    StatsCancelled,
    compute_stats,
    histogram,
    stats_steps,
)
from inspector.core.weights import WeightError, WeightReader, list_weights  # noqa: E402

REL = 1e-4
ROOT = Path(__file__).resolve().parents[2]


# --- torch's side --------------------------------------------------------------------

def torch_programs(path: Path) -> dict[str, Any]:
    import torch
    import transformers.modeling_outputs  # noqa: F401  (HF output pytree types for load)
    from torch.export.pt2_archive._package import load_pt2

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return dict(load_pt2(str(path)).exported_programs) if _multi(path) else \
            {_only_program(path): torch.export.load(str(path))}


def _multi(path: Path) -> bool:
    with open_archive(path) as a:
        return len(a.program_names) > 1


def _only_program(path: Path) -> str:
    with open_archive(path) as a:
        return a.program_names[0]


def torch_stats(t: Any) -> dict[str, Any]:
    """What torch says about one loaded tensor, in our stats' terms."""
    import torch

    t = t.detach()
    if t.is_floating_point() and t.element_size() <= 2 or t.dtype == torch.complex32:
        t = t.to(torch.complex64 if t.is_complex() else torch.float32)  # exact widening
    nan = int(torch.isnan(t).sum()) if t.is_floating_point() or t.is_complex() else 0
    inf = int(torch.isinf(t).sum()) if t.is_floating_point() or t.is_complex() else 0
    zeros = int((t == 0).sum())
    if t.is_floating_point() or t.is_complex():
        vals = t[torch.isfinite(t)]
    else:
        vals = t.reshape(-1)
    n = vals.numel()
    out: dict[str, Any] = {"nan": nan, "inf": inf, "zeros": zeros, "n": n}
    if t.dtype == torch.bool:
        num = vals.double()
        out.update(min=bool(vals.min()) if n else None, max=bool(vals.max()) if n else None)
    elif t.is_complex():
        num = vals
        out.update(min=None, max=None)
    elif t.is_floating_point():
        num = vals
        out.update(min=float(num.min()) if n else None, max=float(num.max()) if n else None)
    else:
        num = vals.double()
        out.update(min=int(vals.min()) if n else None, max=int(vals.max()) if n else None)
    if n:
        m = num.mean()
        out["mean"] = (float(m.real), float(m.imag)) if t.is_complex() else float(m)
        out["abs_mean"] = float(num.abs().double().mean())
    else:
        out["mean"] = out["abs_mean"] = None
    out["std"] = float(num.std()) if n > 1 else None
    return out


def assert_close(ours: Any, ref: Any, what: str, scale: float = 0.0) -> None:
    """Relative 1e-4; a mean near zero is held to 1e-6 of the values' mean
    magnitude instead (float32 summation, torch's included, is only that exact)."""
    if ref is None:
        assert ours is None, f"{what}: {ours} but torch has none"
        return
    assert ours is not None, f"{what}: None but torch says {ref}"
    if isinstance(ref, tuple):
        for o, r, part in zip(ours, ref, ("real", "imag")):
            assert_close(o, r, f"{what} ({part})", scale)
        return
    if isinstance(ref, (bool, int)) and not isinstance(ref, float):
        assert ours == ref, f"{what}: {ours} != torch's {ref}"
        return
    tol = max(REL * abs(ref), 1e-6 * scale)
    assert abs(ours - ref) <= tol, f"{what}: {ours} vs torch's {ref} (tolerance {tol:.3g})"


def compare_archive(path: Path) -> int:
    """Every weight of every program against torch; returns how many were compared."""
    programs = torch_programs(path)
    compared = 0
    with open_archive(path) as archive:
        for name, ep in programs.items():
            tensors = dict(ep.state_dict)
            tensors.update({k: v for k, v in ep.constants.items() if hasattr(v, "dtype")})
            weights = list_weights(archive, name, archive.program(name))
            assert {w.name for w in weights} >= set(tensors), f"{path.name}:{name} misses weights"
            with WeightReader(archive) as reader:
                for w in weights:
                    if w.name not in tensors:
                        assert not w.readable, f"{w.name} is read but torch has no tensor for it"
                        continue
                    t = tensors[w.name]
                    kind = _torch_kind(ep, w.name)
                    assert w.kind == kind, f"{w.name}: kind {w.kind}, torch says {kind}"
                    assert list(t.shape) == list(w.sizes), w.name
                    assert w.dtype_name == str(t.dtype).removeprefix("torch."), w.name
                    assert w.readable, f"{w.name}: {w.note}"
                    check_stats(compute_stats(reader, w), torch_stats(t), f"{path.name}:{name}:{w.name}")
                    compared += 1
    return compared


def _torch_kind(ep: Any, name: str) -> str:
    sig = ep.graph_signature
    if name in sig.parameters:
        return "parameter"
    if name in sig.buffers:
        return "buffer"
    return "constant"


def check_stats(ours: Any, ref: dict[str, Any], what: str) -> None:
    for key in ("nan", "inf", "zeros"):
        assert getattr(ours, key) == ref[key], f"{what}: {key} {getattr(ours, key)} != torch's {ref[key]}"
    assert ours.finite == ref["n"], what
    scale = ref["abs_mean"] or 0.0
    for key in ("min", "max"):
        assert_close(getattr(ours, key), ref[key], f"{what}: {key}")
    assert_close(ours.mean, ref["mean"], f"{what}: mean", scale)
    assert_close(ours.std, ref["std"], f"{what}: std")


# --- archives ------------------------------------------------------------------------

class Zoo:  # built lazily: importing torch at collection time slows every test run
    @staticmethod
    def module() -> Any:
        import torch
        from torch import nn

        class Model(nn.Module):
            def __init__(self) -> None:
                super().__init__()
                g = torch.Generator().manual_seed(0)

                def r(*s: int) -> Any:
                    return torch.randn(*s, generator=g)
                self.w32 = nn.Parameter(r(8, 6))
                self.w16 = nn.Parameter(r(5, 7).half())
                self.wbf = nn.Parameter(r(9, 3).bfloat16())
                self.w64 = nn.Parameter(r(4).double())
                self.wt = nn.Parameter(r(6, 10).t())  # transposed: strides (1, 6)
                nan = r(5, 5)
                nan[0, 1], nan[2, 2], nan[3, 0], nan[4, 4] = math.nan, math.inf, -math.inf, 0.0
                self.wnan = nn.Parameter(nan)
                self.wbig = nn.Parameter(r(70_000) * 3 + 1.5)  # several blocks
                near = torch.ones(3000) + r(3000) * 1e-3  # mean >> spread: the shifted path
                self.register_buffer("near_one", near)
                self.register_buffer("big_vals", r(64) * 1e30)  # float32 squares overflow
                self.register_buffer("f8a", (r(33) * 4).to(torch.float8_e4m3fn))
                f8b = (r(17) * 100).to(torch.float8_e5m2)
                f8b[3] = math.inf
                self.register_buffer("f8b", f8b)
                self.register_buffer("i8", torch.randint(-128, 127, (40,), dtype=torch.int8, generator=g))
                self.register_buffer("u8", torch.randint(0, 255, (21,), dtype=torch.uint8, generator=g))
                self.register_buffer("i64", torch.randint(-2**40, 2**40, (9,), dtype=torch.int64, generator=g))
                self.register_buffer("mask", torch.rand(13, generator=g) > 0.5)
                cplx = torch.randn(6, 2, dtype=torch.complex64, generator=g)
                cplx[1, 1] = complex(math.nan, 1.0)
                self.register_buffer("cplx", cplx)
                base = r(10, 12)
                self.register_buffer("view_a", base[2:7])  # offset rows
                self.register_buffer("view_b", base[:, 3:9])  # strided columns
                self.register_buffer("view_c", base[::3, ::2])
                base2 = r(6, 8)
                self.register_buffer("whole", base2)
                self.register_buffer("part", base2[1:4, 2:])
                self.register_buffer("expanded", r(1, 5).expand(4, 5))  # stride 0
                self.register_buffer("np_buf", r(5), persistent=False)  # lives in constants
                self.const = r(4, 4)  # a lifted tensor constant
                z = torch.zeros(7)
                z[1], z[3] = -0.0, 2.0
                self.register_buffer("zeros_buf", z)
                self.register_buffer("one", torch.tensor([3.5]))
                self.register_buffer("empty", torch.zeros(0, 4))
                self.register_buffer("constant_ones", torch.ones(50))

            def forward(self, x: Any) -> Any:
                y = x.sum() + self.w32.sum() + self.w16.float().sum() + self.wt.sum()
                return y + self.np_buf.sum() + self.const.sum() + self.view_b.sum()
        return Model()


@pytest.fixture(scope="module")
def zoo(archive_factory: ArchiveFactory) -> Path:
    import torch

    # (the factory silences torch's warning about views without a complete tensor)
    return archive_factory.export("weights/zoo", Zoo.module(), (torch.randn(4),))


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """The fidelity corpus's models (custom modules, tiny HF models, ExportDB),
    built once per session and shared with the listing and shapes tests."""
    from fidelity_cases import session_corpus

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        archives, _ = session_corpus(tmp_path_factory)
    return [a.path for a in archives if "#noname" not in a.name]


# --- against torch ---------------------------------------------------------------------

def test_corpus_matches_torch(corpus: list[Path]) -> None:
    compared = 0
    with_weights = 0
    for path in corpus:
        n = compare_archive(path)
        compared += n
        with_weights += n > 0
    print(f"compared {compared} tensors of {with_weights} archives with weights "
          f"({len(corpus)} archives) against torch")
    # the corpus is broad: dozens of archives with weights, hundreds of tensors
    assert with_weights >= 20 and compared >= 300, (with_weights, compared)


def test_dtype_zoo_matches_torch(zoo: Path) -> None:
    assert compare_archive(zoo) == 28  # every tensor of the zoo


def test_zoo_covers_what_it_claims(zoo: Path) -> None:
    """The zoo really holds the layouts and kinds the test above relies on."""
    with open_archive(zoo) as a:
        by_name = {w.name: w for w in list_weights(a, "model", a.program("model"))}
    assert by_name["wt"].strides == (1, 10)
    assert by_name["view_a"].storage_offset == 24 and by_name["view_b"].strides == (12, 1)
    assert by_name["view_a"].record == by_name["view_b"].record  # one storage, one record
    assert by_name["expanded"].strides[0] == 0
    assert by_name["np_buf"].kind == "buffer" and by_name["const"].kind == "constant"
    assert {w.dtype_name for w in by_name.values()} >= {
        "float32", "float16", "bfloat16", "float64", "float8_e4m3fn", "float8_e5m2",
        "int8", "uint8", "int64", "bool", "complex64"}


def test_small_blocks_give_the_same_stats(zoo: Path) -> None:
    """Block boundaries (Chan's combination, per-block NaN filtering) change nothing."""
    with open_archive(zoo) as a, WeightReader(a) as r:
        for w in list_weights(a, "model"):
            if not w.readable:
                continue
            whole = compute_stats(r, w)
            small = compute_stats(r, w, block_elements=7)
            assert (small.nan, small.inf, small.zeros, small.finite) == \
                (whole.nan, whole.inf, whole.zeros, whole.finite), w.name
            for key in ("min", "max", "mean", "std"):
                a_, b_ = getattr(small, key), getattr(whole, key)
                if isinstance(b_, tuple):
                    assert np.allclose(a_, b_, rtol=1e-5, atol=1e-7), w.name
                elif b_ is None or isinstance(b_, bool):
                    assert a_ == b_, (w.name, key)
                else:
                    assert math.isclose(a_, b_, rel_tol=1e-5, abs_tol=1e-7 * (abs(whole.std or 0) + 1)), \
                        (w.name, key, a_, b_)


def test_float8_tables_are_torchs() -> None:
    import torch

    for code, name in FLOAT8.items():
        expected = torch.arange(256, dtype=torch.uint8).view(getattr(torch, name)).float().numpy()
        ours = float8_table(code)
        assert np.array_equal(ours, expected, equal_nan=True), name
        assert np.array_equal(np.signbit(ours), np.signbit(expected)), name


def test_bfloat16_and_half_values_are_exact(zoo: Path) -> None:
    """Not just the stats: every converted value equals torch's float32 widening."""
    programs = torch_programs(zoo)
    sd = programs["model"].state_dict
    with open_archive(zoo) as a, WeightReader(a) as r:
        for w in list_weights(a, "model"):
            if w.name in ("wbf", "w16", "f8a", "f8b"):
                ours = np.concatenate(list(r.blocks(w)))
                theirs = sd[w.name].detach().float().reshape(-1).numpy()
                assert np.array_equal(ours, theirs, equal_nan=True), w.name


def test_histogram_counts_match_numpy_on_torchs_values(zoo: Path) -> None:
    programs = torch_programs(zoo)
    sd = programs["model"].state_dict
    with open_archive(zoo) as a, WeightReader(a) as r:
        ws = {w.name: w for w in list_weights(a, "model")}
        for name in ("w32", "wnan", "wbig", "wt", "view_c", "i8"):
            h = histogram(r, ws[name], bins=16)
            t = sd[name].detach().reshape(-1)
            vals = (t[t.isfinite()] if t.is_floating_point() else t).double().numpy()
            # the bins as the docstring promises them, from torch's values alone: 16
            # over the finite min..max; an integer weight with fewer distinct values
            # one per value (centred on it)
            lo, hi, bins = float(vals.min()), float(vals.max()), 16
            if not t.is_floating_point() and hi - lo + 1 <= bins:
                lo, hi, bins = lo - 0.5, hi + 0.5, int(hi - lo + 1)
            expected, edges = np.histogram(vals, bins=bins, range=(lo, hi))
            assert np.allclose(h.edges, edges, rtol=1e-6), name
            assert np.array_equal(h.counts, expected), name
            assert h.counts.sum() == vals.size
        ints = histogram(r, ws["mask"])
        assert ints.counts.tolist() == [int((~sd["mask"]).sum()), int(sd["mask"].sum())]


def test_progress_and_cancel(zoo: Path) -> None:
    with open_archive(zoo) as a, WeightReader(a) as r:
        w = next(w for w in list_weights(a, "model") if w.name == "wbig")
        steps = stats_steps(r, w, block_elements=10_000)
        fractions = []
        try:
            while True:
                fractions.append(next(steps))
        except StopIteration as stop:
            result = stop.value
        assert fractions == sorted(fractions) and fractions[-1] == 1.0 and len(fractions) == 7
        assert result.finite == 70_000
        calls = []

        def cancel() -> bool:
            calls.append(1)
            return len(calls) >= 2
        with pytest.raises(StatsCancelled):
            compute_stats(r, w, should_cancel=cancel, block_elements=10_000)
        assert len(calls) == 2  # asked between blocks, stopped at once
        with pytest.raises(StatsCancelled):
            histogram(r, w, stats=result, should_cancel=lambda: True)


# --- records stored otherwise --------------------------------------------------------------

def _rewrite(src: Path, dst: Path, *, compress: bool = False, big_endian: bool = False,
             config_edit: Any = None, record_edit: dict[str, bytes] | None = None) -> None:
    """Copy an archive, deflating records, byte-swapping them (byteorder 'big'),
    editing the weights config or replacing records."""
    with open_archive(src) as a:
        top = a.top
        metas = {f"{top}data/{which}/{m['path_name']}": m["tensor_meta"]["dtype"]
                 for which in ("weights", "constants")
                 for m in a.payload_config("model", which).values()}
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w") as zout:
        for info in zin.infolist():
            data = zin.read(info.filename)
            rel = info.filename[len(top):]
            if big_endian and info.filename in metas:
                size = {6: 2, 7: 4, 8: 8, 13: 2, 4: 4, 5: 8, 3: 2, 10: 4}.get(metas[info.filename], 1)
                data = np.frombuffer(data, f"<u{size}").astype(f">u{size}").tobytes() if size > 1 else data
            if big_endian and rel == "byteorder":
                data = b"big"
            if config_edit and rel == "data/weights/model_weights_config.json":
                doc = json.loads(data)
                config_edit(doc["config"])
                data = json.dumps(doc).encode()
            if record_edit and rel in record_edit:
                data = record_edit[rel]
            method = zipfile.ZIP_DEFLATED if compress and info.filename in metas \
                else zipfile.ZIP_STORED
            zout.writestr(zipfile.ZipInfo(info.filename, info.date_time), data, compress_type=method)


def _all_stats(path: Path, **kw: Any) -> dict[str, Any]:
    with open_archive(path) as a, WeightReader(a) as r:
        return {w.name: compute_stats(r, w, **kw).as_dict()
                for w in list_weights(a, "model") if w.readable}


def test_compressed_and_big_endian_records_read_the_same(zoo: Path, tmp_path: Path) -> None:
    stored = _all_stats(zoo)
    deflated = tmp_path / "deflated.pt2"
    _rewrite(zoo, deflated, compress=True)
    with zipfile.ZipFile(deflated) as z:
        assert any(i.compress_type == zipfile.ZIP_DEFLATED for i in z.infolist())
    assert _all_stats(deflated) == stored
    assert _all_stats(deflated, block_elements=5) == _all_stats(zoo, block_elements=5)
    big = tmp_path / "big.pt2"
    _rewrite(zoo, big, big_endian=True)
    with open_archive(big) as a:
        assert a.byteorder == "big"
    assert _all_stats(big) == stored


# --- configs that lie -----------------------------------------------------------------------

LIES = {
    "too big": lambda m: m["tensor_meta"].update(sizes=[{"as_int": 9}, {"as_int": 6}]),
    "offset past end": lambda m: m["tensor_meta"].update(storage_offset={"as_int": 10}),
    "stride past end": lambda m: m["tensor_meta"].update(strides=[{"as_int": 60}, {"as_int": 1}]),
    "negative stride": lambda m: m["tensor_meta"].update(strides=[{"as_int": -6}, {"as_int": 1}]),
    "negative size": lambda m: m["tensor_meta"].update(sizes=[{"as_int": -8}, {"as_int": 6}]),
    "huge size": lambda m: m["tensor_meta"].update(sizes=[{"as_int": 2**62}, {"as_int": 2**62}]),
    "strides short": lambda m: m["tensor_meta"].update(strides=[{"as_int": 1}]),
    "missing record": lambda m: m.update(path_name="weight_999"),
    "escaping path": lambda m: m.update(path_name="../../models/model.json"),
    "wider dtype": lambda m: m["tensor_meta"].update(dtype=8),  # float64 over float32 bytes
    "unknown dtype": lambda m: m["tensor_meta"].update(dtype=99),
    "no tensor_meta": lambda m: m.pop("tensor_meta"),
    "symbolic size": lambda m: m["tensor_meta"].update(sizes=[{"as_expr": {"expr_str": "s0"}}, {"as_int": 6}]),
}


@pytest.mark.parametrize("lie", sorted(LIES))
def test_lying_config_is_an_error_for_that_weight(zoo: Path, tmp_path: Path, lie: str) -> None:
    bad = tmp_path / "lie.pt2"
    _rewrite(zoo, bad, config_edit=lambda c: LIES[lie](c["w32"]))
    truth = _all_stats(zoo)
    with open_archive(bad) as a, WeightReader(a) as r:
        weights = {w.name: w for w in list_weights(a, "model")}
        w = weights["w32"]
        if w.readable:
            with pytest.raises(WeightError) as err:
                compute_stats(r, w)
            assert "w32" in str(err.value)
        else:
            assert w.note and ("error" in w.note or "not read" in w.note)
        for name, other in weights.items():  # the others are still read, unchanged
            if name != "w32" and other.readable:
                assert compute_stats(r, other).as_dict() == truth[name], name
    out = _cli("weights", str(bad), "--json")
    assert out.returncode == 0, out.stderr
    row = next(x for x in json.loads(out.stdout)["programs"][0]["weights"] if x["name"] == "w32")
    assert row["stats"] is None and row["note"]


def test_record_not_a_whole_number_of_elements(zoo: Path, tmp_path: Path) -> None:
    with open_archive(zoo) as a:
        rec = next(w.record for w in list_weights(a, "model") if w.name == "w32")
        data = a.read_bytes(rec, 1 << 20)
    bad = tmp_path / "odd.pt2"
    _rewrite(zoo, bad, record_edit={rec: data[:-3]})
    with open_archive(bad) as a, WeightReader(a) as r:
        w = next(w for w in list_weights(a, "model") if w.name == "w32")
        with pytest.raises(WeightError, match="not a multiple"):
            compute_stats(r, w)


def test_truncated_compressed_record_is_an_error(zoo: Path, tmp_path: Path) -> None:
    """A deflated record whose stream ends before its header says: WeightError."""
    deflated = tmp_path / "deflated.pt2"
    _rewrite(zoo, deflated, compress=True)
    with open_archive(deflated) as a:
        w = next(w for w in list_weights(a, "model") if w.name == "wbig")
        info = a.entry(w.record)
    raw = bytearray(deflated.read_bytes())
    start = info.header_offset + 30 + len(info.filename) + len(info.extra)
    raw[start + 100: start + info.compress_size] = b"\0" * (info.compress_size - 100)
    broken = tmp_path / "broken.pt2"
    broken.write_bytes(bytes(raw))
    with open_archive(broken) as a, WeightReader(a) as r:
        w = next(w for w in list_weights(a, "model") if w.name == "wbig")
        with pytest.raises(WeightError):
            compute_stats(r, w)


def test_pickled_record_is_not_read(zoo: Path, tmp_path: Path) -> None:
    bad = tmp_path / "pickled.pt2"
    _rewrite(zoo, bad, config_edit=lambda c: c["w32"].update(use_pickle=True))
    with open_archive(bad) as a, WeightReader(a) as r:
        w = next(w for w in list_weights(a, "model") if w.name == "w32")
        assert w.note == "not read (pickled)"
        with pytest.raises(WeightError):
            list(r.blocks(w))


# --- the command ------------------------------------------------------------------------------

def _cli(*args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "inspector", *args], capture_output=True,
                          text=True, env=env, timeout=300)


def test_cli_json_schema_and_values(zoo: Path) -> None:
    out = _cli("weights", str(zoo), "--json")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    (program,) = doc["programs"]
    assert program["name"] == "model"
    rows = {w["name"]: w for w in program["weights"]}
    for row in rows.values():
        assert set(row) == {"name", "kind", "dtype", "shape", "bytes", "stats", "note"}
        assert row["kind"] in ("parameter", "buffer", "constant")
        if row["stats"] is not None:
            assert set(row["stats"]) == {"min", "max", "mean", "std", "nan", "inf", "zeros"}
    assert rows["wnan"]["stats"]["nan"] == 1 and rows["wnan"]["stats"]["inf"] == 2
    assert rows["w16"]["bytes"] == 5 * 7 * 2 and rows["wt"]["shape"] == [10, 6]
    assert rows["empty"]["stats"]["min"] is None
    sd = torch_programs(zoo)["model"].state_dict
    assert math.isclose(rows["w32"]["stats"]["std"], float(sd["w32"].detach().std()), rel_tol=REL)
    text = _cli("weights", str(zoo))
    assert text.returncode == 0 and "wnan" in text.stdout and "3 with NaN/Inf" in text.stdout  # wnan, f8b, cplx


def test_cli_errors_are_one_line(zoo: Path, tmp_path: Path) -> None:
    out = _cli("weights", str(zoo), "--program", "nope")
    assert out.returncode == 2 and out.stderr.startswith("error: ") and out.stderr.count("\n") == 1
    junk = tmp_path / "junk.pt2"
    junk.write_bytes(b"not a zip at all")
    out = _cli("weights", str(junk))
    assert out.returncode == 2 and out.stderr.startswith("error: ") and "Traceback" not in out.stderr


def test_zip_directory_that_overstates_a_stored_record(zoo: Path, tmp_path: Path) -> None:
    """The central directory says a stored record is bigger than it is (its bytes
    would run into the next entry) and the config claims that many elements: an
    error, not values read from the neighbouring records."""
    sys.path.insert(0, str(ROOT / "tests" / "security"))
    import zipcraft

    edited = tmp_path / "edited.pt2"
    _rewrite(zoo, edited, config_edit=lambda c: c["w32"]["tensor_meta"].update(
        sizes=[{"as_int": 48}, {"as_int": 6}]))
    with open_archive(edited) as a:
        w = next(w for w in list_weights(a, "model") if w.name == "w32")
        name = a.top + w.record
        assert a.entry(w.record).file_size == 8 * 6 * 4
    lying = tmp_path / "lying.pt2"
    lying.write_bytes(zipcraft.patch_entry(edited.read_bytes(), name, csize=48 * 6 * 4,
                                           usize=48 * 6 * 4))
    with open_archive(lying) as a, WeightReader(a) as r:
        w = next(w for w in list_weights(a, "model") if w.name == "w32")
        with pytest.raises(WeightError, match="overlaps the next entry"):
            compute_stats(r, w)
        others = [x for x in list_weights(a, "model") if x.readable and x.name != "w32"]
        assert all(compute_stats(r, x) for x in others)  # the rest still read
