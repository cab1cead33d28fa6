"""Stack traces and module stacks as torch writes them into node metadata."""

from __future__ import annotations

from pathlib import Path

from inspector.core.archive import open_archive
from inspector.core.frames import (
    first_user_frame,
    is_library_file,
    module_path,
    parse_module_stack,
    parse_stack_trace,
    summary_frame,
)

TRACE = (
    'File "/home/me/model.py", line 6, in forward\n'
    "    z = self.lin(x) + self.b\n"
    '  File "/usr/lib/python3.11/site-packages/torch/nn/modules/linear.py", line 134, in forward\n'
    "    return F.linear(input, self.weight, self.bias)"
)


def test_frames_in_order_with_user_marks() -> None:
    frames = parse_stack_trace(TRACE)
    assert [(f.file, f.line, f.function) for f in frames] == [
        ("/home/me/model.py", 6, "forward"),
        ("/usr/lib/python3.11/site-packages/torch/nn/modules/linear.py", 134, "forward"),
    ]
    assert frames[0].code == "z = self.lin(x) + self.b"
    assert [f.is_user for f in frames] == [True, False]
    assert first_user_frame(frames) == frames[0]


def test_summary_frame_is_the_innermost_like_fx() -> None:
    assert summary_frame(TRACE) == (
        "/usr/lib/python3.11/site-packages/torch/nn/modules/linear.py", "134", "forward",
        "return F.linear(input, self.weight, self.bias)")
    # a trace without a code line has no summary, as in FX
    assert summary_frame('File "torch/fx/passes/runtime_assert.py", line 24, in f') is None
    assert parse_stack_trace(None) == ()


def test_library_detection() -> None:
    assert is_library_file("/x/site-packages/transformers/models/gpt2/modeling_gpt2.py")
    assert is_library_file("torch/fx/passes/runtime_assert.py")
    assert not is_library_file("/home/me/project/model.py")


def test_module_stack() -> None:
    text = ("L__self__,,__main__.M;"
            "L__self___h_0,h.0,transformers.models.gpt2.modeling_gpt2.GPT2Block;"
            "getattr_L__self___h_0_attn,getattr(L['self'].h, '0').attn,a.b.Attn")
    entries = parse_module_stack(text)
    assert [e.path for e in entries] == ["", "h.0", "getattr(L['self'].h, '0').attn"]
    assert entries[1].class_name == "GPT2Block"
    assert module_path(text) == "getattr(L['self'].h, '0').attn"
    assert parse_module_stack("_empty_nn_module_stack_from_metadata_hook,"
                              "_empty_nn_module_stack_from_metadata_hook,"
                              "_empty_nn_module_stack_from_metadata_hook") == ()


def test_real_archive_nodes_link_to_this_test_file(small_archive: Path) -> None:
    with open_archive(small_archive) as a:
        program = a.program("model")
    linear = next(n for n in program.all_nodes() if n.op_name == "linear")
    frames = parse_stack_trace(linear.stack_trace)
    user = first_user_frame(frames)
    assert user is not None and user.file.endswith("conftest.py")
    assert "self.lin(x)" in user.code
    assert module_path(linear.nn_module_stack) == "lin"
