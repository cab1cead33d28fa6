"""Measurement (issue 17): candidate lean parsers side by side on a big program's JSON.

    python tests/benchmarks/lean_parsers.py PROGRAM.pt2 [--visible 80]

Each candidate runs in its own child process (its peak RSS is its own) over the
biggest program JSON in the archive (bench_lean.py builds the 100k-node one), and
reports CPU seconds and peak RSS at two points:
  visible: what the listing needs to render the first screen: the first N nodes as
           Python values (target, inputs, outputs, metadata) and their outputs'
           tensor_values;
  full:    what the whole listing needs: every node's target, inputs, outputs and
           stack trace, and every tensor_values entry (nn_module_stack and torch_fn
           left undecoded where the candidate can leave them).
The renderer's own cost (the same for every candidate) is not in these numbers.
msgspec and pysimdjson are measured only if installed (they are not dependencies).

Measured 2026-12-01 on the 100k-node program (201 MB JSON; 2 shared CPUs, load ~7,
so compare within a run; CPU s / peak MB, the bytes alone 209 MB):
  candidate                          visible          full
  orjson.loads (GC off)              1.16 / 1294      1.16 / 1294
  msgspec Structs + Raw fields       0.23 /  267      1.09 /  904
  msgspec.Raw node spans + orjson    0.20 /  230      1.18 /  859
  pysimdjson lazy proxies            0.43 /  788      1.60 / 1649
  model+listing, orjson (today)      3.40 / 1295      4.70 / 1295
  model+listing, msgspec.Raw spans   0.80 /  703      4.95 /  703   (same listing text)
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import orjson


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _program_bytes(path: Path) -> bytes:
    with zipfile.ZipFile(path) as z:
        info = max((i for i in z.infolist() if "/models/" in i.filename
                    and i.filename.endswith(".json")), key=lambda i: i.file_size)
        return z.read(info)


def _out_names(outputs) -> list[str]:
    names = []
    for o in outputs:
        if isinstance(o, dict):
            for v in o.values():
                if isinstance(v, dict) and isinstance(v.get("name"), str):
                    names.append(v["name"])
    return names


def cand_orjson(data: bytes, n_visible: int):
    """today's floor: the whole tree, once"""
    doc = orjson.loads(data)
    yield "visible"
    graph = doc["graph_module"]["graph"]
    yield "full", len(graph["nodes"])


try:  # measured only where installed; Structs at module level, where msgspec
    import msgspec  # resolves their (postponed) annotations

    class Meta(msgspec.Struct):
        stack_trace: str | None = None
        nn_module_stack: msgspec.Raw = msgspec.Raw()  # kept undecoded
        torch_fn: msgspec.Raw = msgspec.Raw()

    class Node(msgspec.Struct):
        target: str
        inputs: msgspec.Raw
        outputs: msgspec.Raw
        metadata: msgspec.Raw
        name: str | None = None
        is_hop_single_tensor_return: msgspec.Raw = msgspec.Raw()

    class Graph(msgspec.Struct):
        nodes: list[Node]
        tensor_values: dict[str, msgspec.Raw]
        inputs: msgspec.Raw
        outputs: msgspec.Raw

    class GraphModule(msgspec.Struct):
        graph: Graph
        signature: msgspec.Raw

    class Doc(msgspec.Struct):
        graph_module: GraphModule

    class SpanGraph(msgspec.Struct):
        nodes: list[msgspec.Raw]
        tensor_values: dict[str, msgspec.Raw]

    class SpanGraphModule(msgspec.Struct):
        graph: SpanGraph

    class SpanDoc(msgspec.Struct):
        graph_module: SpanGraphModule
except ImportError:
    msgspec = None


def cand_msgspec_struct(data: bytes, n_visible: int):
    """msgspec typed Structs; inputs/outputs/metadata/tensor values left as Raw spans"""
    doc = msgspec.json.decode(data, type=Doc)
    graph = doc.graph_module.graph
    dec = msgspec.json.Decoder()
    meta_dec = msgspec.json.Decoder(Meta)
    tv = graph.tensor_values
    for node in graph.nodes[:n_visible]:
        node.target, dec.decode(node.inputs), dec.decode(node.metadata)
        for name in _out_names(dec.decode(node.outputs)):
            if name in tv:
                dec.decode(tv[name])
    yield "visible"
    kept = []
    for node in graph.nodes:
        kept.append((node.target, dec.decode(node.inputs), dec.decode(node.outputs),
                     meta_dec.decode(node.metadata).stack_trace))
    values = {k: dec.decode(v) for k, v in tv.items()}
    yield "full", len(kept) + 0 * len(values)


def cand_msgspec_raw_spans(data: bytes, n_visible: int):
    """one C pass (msgspec) recording each node's byte span (msgspec.Raw); orjson per node on demand"""
    doc = msgspec.json.decode(data, type=SpanDoc)
    graph = doc.graph_module.graph
    tv = graph.tensor_values
    for raw in graph.nodes[:n_visible]:
        node = orjson.loads(memoryview(raw))
        for name in _out_names(node["outputs"]):
            if name in tv:
                orjson.loads(memoryview(tv[name]))
    yield "visible"
    kept = []
    for raw in graph.nodes:
        n = orjson.loads(memoryview(raw))
        kept.append((n["target"], n["inputs"], n["outputs"], n["metadata"].get("stack_trace")))
    values = {k: orjson.loads(memoryview(v)) for k, v in tv.items()}
    yield "full", len(kept) + 0 * len(values)


def cand_simdjson(data: bytes, n_visible: int):
    """pysimdjson: one SIMD pass to a tape, lazy proxies over it"""
    import simdjson

    parser = simdjson.Parser()
    doc = parser.parse(data)
    graph = doc["graph_module"]["graph"]
    nodes, tv = graph["nodes"], graph["tensor_values"]
    for i in range(n_visible):
        node = nodes[i].as_dict()
        for name in _out_names(node["outputs"]):
            if name in tv:
                tv[name].as_dict()
    yield "visible"
    kept = []
    for node in nodes:
        meta = node["metadata"]
        kept.append((node["target"], node["inputs"].as_list(), node["outputs"].as_list(),
                     meta["stack_trace"] if "stack_trace" in meta else None))
    values = tv.as_dict()
    yield "full", len(kept) + 0 * len(values)


class _SpanList(list):
    """Node spans that parse_program reads as the node list: each node is decoded
    (orjson) only when the parser reaches it, and freed when it sets the slot to None."""

    def __iter__(self):
        for i in range(len(self)):
            raw = list.__getitem__(self, i)
            yield None if raw is None else orjson.loads(memoryview(raw))


def cand_model_today(data: bytes, n_visible: int):
    """today's program model and listing: orjson.loads, parse_program, render_listing"""
    from inspector.core.listing import render_listing
    from inspector.core.program import parse_program

    program = parse_program(orjson.loads(data), "decoder", consume=True)
    yield "visible"
    yield "full", len(render_listing(program).lines) * 0 + len(program.graph.nodes)


def cand_model_spans(data: bytes, n_visible: int):
    """the same model and listing, fed node by node from msgspec.Raw spans (the whole
    tree never exists); an experiment: the rest of the document is found by a byte search"""
    from inspector.core.listing import render_listing
    from inspector.core.program import parse_program

    spans = msgspec.json.decode(data, type=SpanDoc).graph_module.graph.nodes
    start, last = data.find(bytes(spans[0])), bytes(spans[-1])
    end = data.rfind(last) + len(last)
    assert data[start - 1:start] == b"[" and data[end:end + 1] == b"]"
    doc = orjson.loads(data[:start] + data[end:])  # everything but the nodes
    doc["graph_module"]["graph"]["nodes"] = _SpanList(spans)
    del spans
    yield "visible"
    program = parse_program(doc, "decoder", consume=True)
    yield "full", len(render_listing(program).lines) * 0 + len(program.graph.nodes)


CANDIDATES = {"orjson.loads (today)": cand_orjson,
              "msgspec Structs + Raw fields": cand_msgspec_struct,
              "msgspec.Raw node spans + orjson": cand_msgspec_raw_spans,
              "pysimdjson lazy proxies": cand_simdjson,
              "model+listing: orjson.loads (today)": cand_model_today,
              "model+listing: msgspec.Raw spans": cand_model_spans}


def child(name: str, path: Path, n_visible: int) -> None:
    import gc

    gc.disable()  # as archive.Archive parses: nothing to collect
    data = _program_bytes(path)
    base = _peak_mb()
    c = time.process_time()
    steps = CANDIDATES[name](data, n_visible)
    next(steps)
    visible, visible_mb = time.process_time() - c, _peak_mb()
    _, nodes = next(steps)
    full, full_mb = time.process_time() - c, _peak_mb()
    print(orjson.dumps({"visible": visible, "visible_mb": visible_mb, "full": full,
                        "full_mb": full_mb, "input_mb": base, "nodes": nodes}).decode(), flush=True)
    os._exit(0)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("archive", type=Path)
    ap.add_argument("--visible", type=int, default=80, help="nodes on the first screen")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.child, args.archive, args.visible)
    print(f"{'candidate':34} {'visible CPU':>12} {'peak':>8} {'full CPU':>9} {'peak':>8}   "
          "(peaks include the JSON bytes held)")
    for name in CANDIDATES:
        proc = subprocess.run([sys.executable, __file__, str(args.archive), "--visible",
                               str(args.visible), "--child", name], capture_output=True)
        if proc.returncode != 0 or not proc.stdout:
            why = proc.stderr.decode(errors="replace").strip().splitlines()[-1:] or ["?"]
            print(f"{name:34} not measured ({why[0]})")
            continue
        r = orjson.loads(proc.stdout.splitlines()[-1])
        print(f"{name:34} {r['visible']:>10.3f} s {r['visible_mb']:>5.0f} MB {r['full']:>7.3f} s "
              f"{r['full_mb']:>5.0f} MB   ({r['nodes']:,} nodes; bytes alone {r['input_mb']:.0f} MB)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
