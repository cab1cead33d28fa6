"""Modules for the fidelity corpus: the corners of print_readable, and tiny HF models.

Each builder returns an ExportedProgram (saved with torch.export.save) or a
dict of them (saved as one multi-program archive with package_pt2). Sizes are
tiny: the point is the variety of graph shapes, not the arithmetic.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

Builder = Callable[[], Any]


def _once(build: Builder) -> Builder:
    """Export a module once even when several cases start from it (the
    decomposed variant, the multi-program archive)."""
    cache: list[Any] = []

    def wrapper() -> Any:
        if not cache:
            cache.append(build())
        return cache[0]
    return wrapper


def custom_builders() -> Iterator[tuple[str, str, Builder]]:
    import torch
    from torch.export import Dim, export

    nn = torch.nn

    # -- multi-output ops ---------------------------------------------------------
    class MultiOut(nn.Module):
        def forward(self, x: torch.Tensor) -> Any:
            values, idx = x.max(dim=1)
            a, b = torch.split(x, [2, 2], dim=1)
            top, top_i = torch.topk(x, 2)
            v, m = torch.var_mean(x, dim=0)
            s, si = torch.sort(x, dim=1, descending=True)
            parts = x.unbind(1)
            c1, c2 = x.chunk(2, dim=1)
            return values, idx, a * b, top, top_i, v + m, s, si, parts[0], c1 - c2

    def multi_out() -> Any:
        return export(MultiOut(), (torch.randn(3, 4),))
    yield "ops/multi_output", "ops", multi_out

    @_once
    def multi_out_dynamic() -> Any:
        return export(MultiOut(), (torch.randn(3, 4),), dynamic_shapes=({0: Dim("b", min=2)},))
    yield "ops/multi_output_dynamic", "ops", multi_out_dynamic

    class Norms(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.ln = nn.LayerNorm(8)
            self.bn = nn.BatchNorm1d(8)
            self.gn = nn.GroupNorm(2, 8)
            self.drop = nn.Dropout(0.1)

        def forward(self, x: torch.Tensor) -> Any:
            y = self.ln(x)
            z = self.bn(x)
            w = self.gn(x.unsqueeze(-1)).squeeze(-1)
            return self.drop(y) + z + w

    def norms_decomposed() -> Any:
        return export(Norms().eval(), (torch.randn(4, 8),),
                      dynamic_shapes=({0: Dim("n", min=2, max=64)},)).run_decompositions()
    yield "decomp/norms_eval", "decomp", norms_decomposed

    def norms_train_decomposed() -> Any:
        return export(Norms().train(), (torch.randn(4, 8),)).run_decompositions()
    yield "decomp/norms_train", "decomp", norms_train_decomposed

    def norms_train() -> Any:
        return export(Norms().train(), (torch.randn(4, 8),))
    yield "ops/norms_train", "ops", norms_train

    def multi_out_decomposed() -> Any:
        return export(MultiOut(), (torch.randn(3, 4),),
                      dynamic_shapes=({0: Dim("b", min=2)},)).run_decompositions()
    yield "decomp/multi_output", "decomp", multi_out_decomposed

    # -- symbolic arithmetic in shapes ---------------------------------------------
    class SymShapes(nn.Module):
        def forward(self, x: torch.Tensor, y: torch.Tensor, z: torch.Tensor) -> Any:
            c = torch.cat([x, y], dim=0)  # s0 + s1 rows
            flat = z.reshape(-1)  # s2*s3
            half = flat[: flat.shape[0] // 2]  # floordiv
            v = z.view(z.shape[0] * z.shape[1], 1)
            e = torch.ones(x.shape[0] * 2 + y.shape[0], 3)
            r = z.new_zeros(z.shape[1], z.shape[0] % 3 + 1)
            return c.sum(0), half, v, e, r, x.shape[0] * y.shape[0]

    @_once
    def sym_shapes() -> Any:
        return export(SymShapes(), (torch.randn(4, 3), torch.randn(5, 3), torch.randn(6, 7)),
                      dynamic_shapes=({0: Dim.AUTO}, {0: Dim.AUTO}, {0: Dim.AUTO, 1: Dim.AUTO}))
    yield "ops/sym_shapes", "ops", sym_shapes

    def sym_shapes_decomposed() -> Any:
        return sym_shapes().run_decompositions()
    yield "decomp/sym_shapes", "decomp", sym_shapes_decomposed

    class Derived(nn.Module):
        def forward(self, x: torch.Tensor, y: torch.Tensor) -> Any:
            return x[1:] + y, y.reshape(2, -1).sum(1)

    def derived_dims() -> Any:
        d = Dim("d", min=2, max=100)
        return export(Derived(), (torch.randn(9), torch.randn(8)),
                      dynamic_shapes=({0: 2 * d + 1}, {0: 2 * d}))
    yield "ops/derived_dims", "ops", derived_dims

    class SymScalar(nn.Module):
        def forward(self, x: torch.Tensor, n: int) -> Any:
            m = x.shape[0] / 2  # a SymFloat
            return x * n, x.shape[0] * n, x + m

    def sym_int_io() -> Any:
        return export(SymScalar(), (torch.randn(5, 2), 3),
                      dynamic_shapes=({0: Dim("s", min=2)}, Dim.DYNAMIC))
    yield "ops/sym_int_inputs_outputs", "ops", sym_int_io

    class Unbacked(nn.Module):
        def forward(self, x: torch.Tensor, y: torch.Tensor) -> Any:
            nz = torch.nonzero(x)
            n = y.item()
            torch._check(n >= 2)
            torch._check(n <= 8)
            sel = torch.masked_select(x, x > 0)
            return nz, torch.zeros(n, 2), sel, torch.arange(n)

    def unbacked() -> Any:
        return export(Unbacked(), (torch.randn(4, 3), torch.tensor(3)))
    yield "ops/unbacked", "ops", unbacked

    # -- state: constants, buffers, mutation ------------------------------------------
    class State(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lin = nn.Linear(4, 4)
            self.register_buffer("count", torch.zeros(1, dtype=torch.int64))
            self.register_buffer("scratch", torch.ones(4), persistent=False)
            self.const = torch.tensor([1.0, 2.0, 3.0, 4.0])  # a lifted tensor constant
            self.table = torch.arange(4)

        def forward(self, x: torch.Tensor, y: torch.Tensor) -> Any:
            self.count.add_(1)
            self.scratch.mul_(2)
            y.add_(1)  # user input mutation
            x = x.clone()
            x.mul_(self.const).relu_()
            return self.lin(x) + self.scratch + self.table[1], y

    @_once
    def state() -> Any:
        return export(State(), (torch.randn(2, 4), torch.randn(2, 4)))
    yield "ops/state_mutation_constants", "ops", state

    def state_decomposed() -> Any:
        return state().run_decompositions()
    yield "decomp/state_mutation_constants", "decomp", state_decomposed

    # -- literals of every kind ---------------------------------------------------
    class Literals(nn.Module):
        def forward(self, x: torch.Tensor, idx: torch.Tensor) -> Any:
            a = x.to(torch.bfloat16) * 0.5
            b = x.to(torch.float16).float()
            i = idx.to(torch.int32) + 7
            m = x.masked_fill(x > 0, float("-inf"))
            m2 = x.masked_fill(x < 0, float("inf"))
            g = torch.nn.functional.gelu(x, approximate="tanh")
            p = torch.nn.functional.pad(x, (1, 2), value=1e-5)
            r = torch.arange(0, x.shape[1], 2, dtype=torch.float64, device="cpu")
            f = torch.full((2, 2), 3.25, dtype=torch.bool)
            c = x.unsqueeze(0).unsqueeze(0).contiguous(memory_format=torch.channels_last)
            e = torch.empty_like(x, memory_format=torch.contiguous_format)
            ix = x[idx, None, ...]
            xs = x[:, 1:-1:2]
            cl = x.clamp(min=-1.5, max=None)
            u8 = (x > 0).to(torch.uint8)
            i8 = idx.to(torch.int8) // 2
            return a, b, i, m, m2, g, p, r, f, c, e, ix, xs, cl, u8, i8, x.new_tensor(1e30) * 1e-30

    def literals() -> Any:
        return export(Literals(), (torch.randn(3, 4), torch.tensor([0, 2])))
    yield "ops/literals_dtypes", "ops", literals

    class Kwargs(nn.Module):
        def forward(self, x: torch.Tensor, *, scale: float = 1.0,
                    mask: torch.Tensor | None = None, extra: dict | None = None,
                    max: int = 2, useCache: bool = True) -> Any:  # noqa: A002, N803
            # names FX refuses (a builtin) or snake-cases (camelCase) for placeholders
            y = x * scale * max if useCache else x
            if mask is not None:
                y = y.masked_fill(mask, 0.0)
            if extra is not None:
                y = y + extra["bias"]
            return {"out": y, "pair": (y.sum(), [y.mean()])}

    def kwargs_inputs() -> Any:
        x = torch.randn(3, 4)
        return export(Kwargs(), (x,), {"scale": 2.0, "mask": x > 0, "extra": {"bias": torch.ones(4)},
                                       "max": 3, "useCache": True},
                      dynamic_shapes={"x": {0: Dim("n")}, "scale": None, "max": None,
                                      "useCache": None, "mask": {0: Dim("n")},
                                      "extra": {"bias": None}})
    yield "ops/kwargs_inputs", "ops", kwargs_inputs

    class Identity(nn.Module):
        def forward(self, x: torch.Tensor) -> Any:
            return x

    def identity() -> Any:
        return export(Identity(), (torch.randn(2),))
    yield "ops/identity_empty_graph", "ops", identity

    class ConvNet(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv = nn.Conv2d(3, 4, 3, padding=1, stride=2)
            self.bn = nn.BatchNorm2d(4)
            self.pool = nn.AdaptiveAvgPool2d((2, 2))
            self.fc = nn.Linear(16, 5)

        def forward(self, x: torch.Tensor) -> Any:
            y = self.pool(torch.relu(self.bn(self.conv(x))))
            y = nn.functional.max_pool2d(y, 2, return_indices=True)[0]
            return self.fc(torch.flatten(nn.functional.interpolate(y, size=(2, 2)), 1)).softmax(-1)

    @_once
    def convnet() -> Any:
        return export(ConvNet().eval(), (torch.randn(2, 3, 16, 16),),
                      dynamic_shapes=({0: Dim("batch"), 2: Dim("h", min=8, max=64),
                                       3: Dim("w", min=8, max=64)},))
    yield "ops/convnet_dynamic", "ops", convnet

    def convnet_decomposed() -> Any:
        return convnet().run_decompositions()
    yield "decomp/convnet_dynamic", "decomp", convnet_decomposed

    def convnet_train() -> Any:
        return export(ConvNet().train(), (torch.randn(2, 3, 16, 16),))
    yield "ops/convnet_train", "ops", convnet_train

    class IndexPut(nn.Module):
        def forward(self, x: torch.Tensor, i: torch.Tensor, v: torch.Tensor) -> Any:
            y = x.clone()
            y[i] = v
            y[:, 0] += 1
            z = torch.zeros_like(x).index_put((i,), v, accumulate=True)
            w = torch.where(x > 0, x, torch.tensor(0.0))
            return y, z, w, torch.einsum("ij,kj->ik", x, x), x.as_strided((2, 2), (1, 2))

    def index_put() -> Any:
        return export(IndexPut(), (torch.randn(4, 3), torch.tensor([0, 2]), torch.randn(2, 3)))
    yield "ops/index_put_where", "ops", index_put

    # -- control flow ---------------------------------------------------------------
    class NestedCond(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lin = nn.Linear(3, 3)

        def forward(self, x: torch.Tensor, y: torch.Tensor) -> Any:
            def inner_true(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
                return self.lin(x) + y

            def inner_false(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
                return x * y.sum()

            def outer_true(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
                return torch.cond(y.sum() > 0, inner_true, inner_false, (x, y)).cos()

            def outer_false(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
                return x.sin() - y

            out = torch.cond(x.shape[0] > 4, outer_true, outer_false, (x, y))
            return out, torch.cond(x.sum() > 0, lambda a: (a + 1, a - 1), lambda a: (a * 2, a / 2), (x,))

    @_once
    def nested_cond() -> Any:
        return export(NestedCond(), (torch.randn(6, 3), torch.randn(6, 3)),
                      dynamic_shapes=({0: Dim("n")}, {0: Dim("n")}))
    yield "cond/nested_cond", "cond", nested_cond

    def nested_cond_strict() -> Any:
        return export(NestedCond(), (torch.randn(6, 3), torch.randn(6, 3)),
                      dynamic_shapes=({0: Dim("n")}, {0: Dim("n")}), strict=True)
    yield "cond/nested_cond_strict", "cond", nested_cond_strict

    def nested_cond_decomposed() -> Any:
        return nested_cond().run_decompositions()
    yield "decomp/nested_cond", "decomp", nested_cond_decomposed

    class Loops(nn.Module):
        def forward(self, x: torch.Tensor, n: torch.Tensor) -> Any:
            from torch._higher_order_ops.while_loop import while_loop

            def cond_fn(i: torch.Tensor, acc: torch.Tensor) -> torch.Tensor:
                return i < n

            def body_fn(i: torch.Tensor, acc: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
                return i + 1, acc * 2 + 1

            i, acc = while_loop(cond_fn, body_fn, (torch.tensor(0), x))
            from functorch.experimental.control_flow import map as hop_map
            mapped = hop_map(lambda r, b: r.relu() + b, x, acc[0])
            return i, acc, mapped

    def loops() -> Any:
        return export(Loops(), (torch.randn(3, 2), torch.tensor(4)))
    yield "cond/while_loop_map", "cond", loops

    class Scan(nn.Module):
        def forward(self, x: torch.Tensor) -> Any:
            from torch._higher_order_ops.scan import scan

            def combine(carry: torch.Tensor, xs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
                nxt = carry + xs
                return nxt, nxt.clone()

            return scan(combine, torch.zeros(x.shape[1]), x)

    def scan() -> Any:
        return export(Scan(), (torch.randn(5, 3),))
    yield "cond/scan", "cond", scan

    class AssocScan(nn.Module):
        def forward(self, x: torch.Tensor) -> Any:
            from torch._higher_order_ops.associative_scan import associative_scan
            # generic mode traces vmap wrappers: nodes without outputs (`*_unused`)
            return associative_scan(lambda a, b: a + b, x, 0, combine_mode="generic")

    def assoc_scan() -> Any:
        return export(AssocScan(), (torch.randn(4, 3),))
    yield "cond/associative_scan", "cond", assoc_scan

    class Region(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.w = nn.Parameter(torch.randn(4, 4))

        def forward(self, x: torch.Tensor) -> Any:
            return _region(_region(x, self.w), self.w)

    def invoke_subgraph() -> Any:
        return export(Region(), (torch.randn(2, 4),))
    yield "cond/invoke_subgraph", "cond", invoke_subgraph

    class Odd(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.bag = nn.EmbeddingBag(10, 4, mode="max")

        def forward(self, x: torch.Tensor, off: torch.Tensor, f: torch.Tensor,
                    xs: list[torch.Tensor]) -> Any:
            u, inv, cnt = torch.unique(x, return_inverse=True, return_counts=True)
            c = torch.view_as_complex(f.reshape(-1, 2))
            torch._check(x.shape[0] < 10, lambda: "it's \"big\"\nnewline")
            return (self.bag(x, off), u, inv, cnt, (c * c).abs(), torch.fft.rfft(f),
                    f.to(torch.float8_e4m3fn).float(), torch.div(f, 2, rounding_mode="floor"),
                    torch.arange(3, device="meta"), None, 3, [xs[0] + xs[1], xs[1]], {"k": 2.5})

    def odd() -> Any:
        return export(Odd(), (torch.tensor([1, 2, 4, 5, 4, 3, 2, 9]), torch.tensor([0, 4]),
                              torch.randn(4, 2), [torch.randn(2), torch.randn(2)]))
    yield "ops/odd_outputs_dtypes_devices", "ops", odd

    class Contexts(nn.Module):
        """no_grad / autocast / enable_grad regions become wrap_* HOPs with
        submodules."""

        def __init__(self) -> None:
            super().__init__()
            self.lin = nn.Linear(4, 4)

        def forward(self, x: torch.Tensor) -> Any:
            with torch.no_grad():
                y = self.lin(x) * 2
            with torch.autocast("cpu", dtype=torch.bfloat16):
                z = self.lin(x)
            with torch.enable_grad():
                w = y.sin()
            return y, z, w

    def contexts() -> Any:
        return export(Contexts(), (torch.randn(2, 4),))
    yield "cond/grad_autocast", "cond", contexts

    class Annotated(nn.Module):
        def forward(self, x: torch.Tensor) -> Any:
            import torch.fx.traceback as fx_traceback

            with fx_traceback.annotate({"pp_stage": 0, "long": "x" * 60}):
                y = x + 1
            torch.ops.aten._print("hello")  # a node without outputs
            return y * 2

    def annotated() -> Any:
        import torch.fx.traceback as fx_traceback

        # preserve_node_meta keeps `custom` metadata: `# Annotation: {...}` comments
        with fx_traceback.preserve_node_meta():
            return export(Annotated(), (torch.randn(2),))
    yield "ops/annotate_custom_meta", "ops", annotated

    # -- custom ops (auto_functionalized) ----------------------------------------------
    scale_, twice, parts = _custom_ops()

    class CustomOps(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.register_buffer("b", torch.ones(3))

        def forward(self, x: torch.Tensor) -> Any:
            scale_(self.b, 3.0)
            a, c = twice(x, n=3)
            total, pieces = parts(x.reshape(3, 1), 3)  # a Tensor[] among the outputs
            return a + c + self.b, total, pieces[0] + pieces[2]

    @_once
    def custom_ops() -> Any:
        return export(CustomOps(), (torch.randn(3),))
    yield "ops/custom_ops", "ops", custom_ops

    def custom_ops_decomposed() -> Any:
        return custom_ops().run_decompositions()
    yield "decomp/custom_ops", "decomp", custom_ops_decomposed

    # -- two programs in one archive ---------------------------------------------
    def two_programs() -> Any:
        return {"multi_output": multi_out_dynamic(), "nested_cond": nested_cond(),
                "state": state()}
    yield "multi/three_programs", "multi", two_programs
    yield from builtin_name_builders()


def builtin_name_builders() -> Iterator[tuple[str, str, Builder]]:
    """Inputs named after Python builtins: FX's code generator prints the
    placeholder `input` as `input_1` (and binds `input_1 = input`), so every
    nn.Sequential export (its forward's argument is `input`) meets it."""
    import torch
    from torch.export import Dim, export

    nn = torch.nn

    def sequential() -> Any:
        model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
        return export(model, (torch.randn(3, 4),), dynamic_shapes=({0: Dim("batch")},))
    yield "builtins/sequential", "builtins", sequential

    class Builtins(nn.Module):
        def forward(self, input: torch.Tensor, id: torch.Tensor, type: torch.Tensor,  # noqa: A002
                    sum: torch.Tensor, max: torch.Tensor, input_1: torch.Tensor) -> Any:  # noqa: A002
            # input_1 is taken by the renamed `input`: FX prints it input_2
            a = input + id * type
            b = torch.cat([sum, max], 0).relu()
            return a, b, input_1.sum(), input

    def builtins() -> Any:
        t = torch.randn
        return export(Builtins(), (t(2, 3), t(2, 3), t(2, 3), t(1, 3), t(1, 3), t(2)))
    yield "builtins/many_builtins", "builtins", builtins

    class InCond(nn.Module):
        def forward(self, input: torch.Tensor, sum: torch.Tensor) -> Any:  # noqa: A002
            def true_fn(input: torch.Tensor, sum: torch.Tensor) -> Any:  # noqa: A002
                return (input + sum).cos()

            def false_fn(input: torch.Tensor, sum: torch.Tensor) -> Any:  # noqa: A002
                return input.sin() - sum

            return torch.cond(input.sum() > 0, true_fn, false_fn, (input, sum))

    def in_cond() -> Any:
        return export(InCond(), (torch.randn(3), torch.randn(3)))
    yield "builtins/in_cond", "builtins", in_cond

    class Chunked(nn.Module):
        def forward(self, input: torch.Tensor) -> Any:  # noqa: A002
            first, second = input.chunk(2, dim=0)  # getitem nodes over a renamed input
            return nn.functional.layer_norm(input, [4]), first * second
    yield "builtins/multi_output", "builtins", lambda: export(Chunked(), (torch.randn(4, 4),))


_OPS: list[Any] = []
_REGIONS: list[Any] = []


def _region(a: Any, w: Any) -> Any:
    """A nested_compile_region (invoke_subgraph HOP), made once per process."""
    import torch

    if not _REGIONS:
        @torch.compiler.nested_compile_region
        def region(a, w):  # type: ignore[no-untyped-def]
            return torch.tanh(a @ w)
        _REGIONS.append(region)
    return _REGIONS[0](a, w)


def _custom_ops() -> tuple[Any, Any, Any]:
    """Register the two custom ops once per process (torch refuses a second time).
    Schemas are explicit: annotations are strings under `from __future__ import
    annotations`, which infer_schema cannot resolve in a local scope."""
    import torch

    if not _OPS:
        @torch.library.custom_op("fidelity::scale_", mutates_args=("buf",),
                                 schema="(Tensor(a!) buf, float factor) -> ()")
        def scale_(buf, factor):  # type: ignore[no-untyped-def]
            buf.mul_(factor)

        @torch.library.custom_op("fidelity::twice", mutates_args=(),
                                 schema="(Tensor x, int n=2) -> (Tensor, Tensor)")
        def twice(x, n=2):  # type: ignore[no-untyped-def]
            return x * n, x + n

        @twice.register_fake
        def _(x, n=2):  # type: ignore[no-untyped-def]
            return torch.empty_like(x), torch.empty_like(x)

        @torch.library.custom_op("fidelity::parts", mutates_args=(),
                                 schema="(Tensor x, int n) -> (Tensor, Tensor[])")
        def parts(x, n):  # type: ignore[no-untyped-def]
            return x.sum(0), [x[i] for i in range(n)]

        @parts.register_fake
        def _(x, n):  # type: ignore[no-untyped-def]
            return x.sum(0), [torch.empty_like(x[0]) for _ in range(n)]

        _OPS.extend([scale_, twice, parts])
    return _OPS[0], _OPS[1], _OPS[2]


# --- tiny HuggingFace models ----------------------------------------------------------

def hf_builders() -> Iterator[tuple[str, str, Builder]]:
    import torch
    import transformers as tf
    from torch.export import Dim, export

    torch.manual_seed(0)
    small = dict(vocab_size=97, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                 intermediate_size=64, max_position_embeddings=64)

    def text_model(cls: Any, config: Any, dynamic: bool = True,
                   extra: dict | None = None) -> Any:
        model = cls(config).eval()
        ids = torch.randint(0, 90, (2, 8))
        kwargs: dict[str, Any] = {"input_ids": ids, "attention_mask": torch.ones(2, 8, dtype=torch.long)}
        kwargs.update(extra or {})
        shapes: Any = None
        if dynamic:
            b, s = Dim("batch", min=1, max=16), Dim("seq", min=2, max=32)
            shapes = {k: ({0: b, 1: s} if v.dim() == 2 else None) for k, v in kwargs.items()}
        with torch.no_grad():
            return export(model, (), kwargs, dynamic_shapes=shapes)

    def gpt2() -> Any:
        cfg = tf.GPT2Config(vocab_size=97, n_embd=32, n_layer=2, n_head=2, n_positions=64,
                            use_cache=False)
        return text_model(tf.GPT2LMHeadModel, cfg)
    yield "hf/gpt2", "hf", gpt2

    def bert() -> Any:
        cfg = tf.BertConfig(**small)
        return text_model(tf.BertForSequenceClassification, cfg)
    yield "hf/bert", "hf", bert

    def llama() -> Any:
        cfg = tf.LlamaConfig(**small, num_key_value_heads=1, use_cache=False)
        return text_model(tf.LlamaForCausalLM, cfg)
    yield "hf/llama", "hf", llama

    def mistral() -> Any:
        cfg = tf.MistralConfig(**small, num_key_value_heads=1, use_cache=False, sliding_window=4)
        return text_model(tf.MistralForCausalLM, cfg, dynamic=False)
    yield "hf/mistral", "hf", mistral

    def bart() -> Any:
        cfg = tf.BartConfig(vocab_size=97, d_model=32, encoder_layers=1, decoder_layers=1,
                            encoder_attention_heads=2, decoder_attention_heads=2,
                            encoder_ffn_dim=64, decoder_ffn_dim=64, max_position_embeddings=64,
                            use_cache=False)
        return text_model(tf.BartForConditionalGeneration, cfg,
                          extra={"decoder_input_ids": torch.randint(0, 90, (2, 8))})
    yield "hf/bart", "hf", bart

    def t5() -> Any:
        cfg = tf.T5Config(vocab_size=97, d_model=32, d_kv=16, d_ff=64, num_layers=1,
                          num_decoder_layers=1, num_heads=2, use_cache=False)
        return text_model(tf.T5ForConditionalGeneration, cfg, dynamic=False,
                          extra={"decoder_input_ids": torch.randint(0, 90, (2, 8))})
    yield "hf/t5", "hf", t5

    def vit() -> Any:
        cfg = tf.ViTConfig(hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                           intermediate_size=64, image_size=32, patch_size=8)
        model = tf.ViTForImageClassification(cfg).eval()
        with torch.no_grad():
            return export(model, (torch.randn(2, 3, 32, 32),),
                          dynamic_shapes=({0: Dim("batch", min=1, max=16)},))
    yield "hf/vit", "hf", vit
