"""render_expr(srepr(e)) against str(e), with sympy and torch's own sympy classes.

The product never runs sympy on file content; these tests use sympy (it comes
with torch) only as the reference printer. Expressions are the kinds torch
writes into `tensor_values[*].sizes` / `sym_int_values`: symbols with
assumptions, sums and products of them, FloorDiv / CleanDiv / Mod /
PythonMod / Max / Min, relationals and their conjunctions, and hostile text
that must come back unchanged without being run.
"""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest

sympy = pytest.importorskip("sympy")
functions = pytest.importorskip("torch.utils._sympy.functions")

from inspector.core.symbolic import parse_srepr, render_expr, symbols_in  # noqa: E402

FloorDiv, CleanDiv, Mod, PythonMod = (functions.FloorDiv, functions.CleanDiv,
                                      functions.Mod, functions.PythonMod)
Max, Min, Identity = functions.Max, functions.Min, functions.Identity


def _syms() -> list:
    # torch's naming: s<N> backed sizes, u<N> unbacked, ps/zf... in float land
    return [sympy.Symbol(n, integer=True, positive=True)
            for n in ("s0", "s1", "s9", "s10", "s27", "s77", "s53")] + \
           [sympy.Symbol(n, integer=True) for n in ("u0", "u1")]


S = _syms()
s0, s1, s9, s10, s27, s77, s53, u0, u1 = S


def _check(e: object) -> None:
    text = sympy.srepr(e)
    assert render_expr(text) == str(e), text


HAND_PICKED = [
    s0, s0 + 1, s0 - 1, 1 - s0, 2 * s0, -s0, -2 * s0 + 3, s0 * s1, s0 * s1 * 2,
    s0 + s1, s1 + s0 + s9, s10 + s9, s27 * s77 + s53, s0 ** 2, s0 ** 2 + s0 + 1,
    s0 * s1 - s0, 3 * s0 * s1 + 2 * s1 ** 2 - 7, (s0 + 1) * s1, (s0 + 1) * (s1 - 1),
    -(s0 + 1) * s1, s0 / 2, s0 / s1, (s0 + 1) / 3, s0 / (s1 * s9), 1 / s0,
    s0 ** -2, sympy.sqrt(s0), 1 / sympy.sqrt(s0), s0 ** sympy.Rational(3, 2),
    FloorDiv(s0, 2), FloorDiv(s0 - 1, 2) + 1, FloorDiv(s53 - 1, 2) + 1,
    FloorDiv(2 * s0, 3), FloorDiv(s0 * s1, s9), FloorDiv(FloorDiv(s0, 2), 3) * 2,
    CleanDiv(s0 * 4, 2 + s1), Mod(s0, 3) + 1, Mod(s0 * s1, 4), PythonMod(s0 + 2, 5),
    Max(1, s0), Max(s0, s1), Min(s0, 2 * s1), Max(2, s0 - 1) * s1, Max(s0, s1, 4) + 1,
    Min(s0 + 1, FloorDiv(s1, 2)), Identity(s0 + 1),
    sympy.Eq(s0, 2), sympy.Ne(s0, s1), s0 < 3, s0 <= s1, s0 > 2 * s1, s0 >= 4,
    sympy.Lt(FloorDiv(s0, 2), 3), sympy.And(s0 < 3, s1 > 2), sympy.Or(s0 < 3, sympy.Eq(s1, 2)),
    sympy.Not(s0 < 3), sympy.Eq(Mod(s0, 2), 0), u0 + u1, u0 - 1, -u0 + 5, u0 * s0 - u1,
    s0 * 1024 + s1 * 4 + 7, 4096 * s0, s0 * s1 * s9 + s0 * s1, s0 ** 3 * s1 + s0 * s1 ** 3,
    sympy.oo, -sympy.oo, sympy.Integer(7), sympy.Integer(-7), sympy.Rational(-3, 4),
    sympy.Float(2.5), s0 + sympy.Float(2.5), sympy.Float(1e-7), sympy.Float(1e20),
    sympy.Float(-0.1) * s0, sympy.true, sympy.false,
    functions.TruncToInt(sympy.Symbol("zf0", real=True)),
    functions.ToFloat(s0) / 2, functions.FloatTrueDiv(functions.ToFloat(s0), 2.0),
    functions.IntTrueDiv(s0, s1), functions.PowByNatural(s0, 2) + 1,
    functions.FloatPow(functions.ToFloat(s0), 2.0), functions.ModularIndexing(s0, 2, 4),
    functions.Where(s0 > 2, s1, s9), functions.CeilToInt(functions.ToFloat(s0) / 3),
    functions.OpaqueUnaryFn_sqrt(functions.ToFloat(s0)), s0 * Mod(s1, 3),
    s0 * FloorDiv(s1, 3) + 2, -FloorDiv(s0, 2), 2 * Max(s0, s1), s0 * (s1 + FloorDiv(s9, 2)),
]


@pytest.fixture(autouse=True)
def _fresh_caches():
    """render_expr and the sort keys are memoized: each test computes its answers
    afresh, so a test judges the code, not what an earlier test left in a cache (a
    mutation run forks its mutants after a warm run: a warm cache answered for them)."""
    from inspector.core.symbolic import clear_caches

    clear_caches()
    yield


def _test_id(text: str) -> str:
    """A test id of word characters only: mutmut (tests/mutation/) passes ids on a
    command line, and an id with quotes, spaces or brackets selects no test there."""
    return re.sub(r"\W+", "_", text).strip("_")[:60] or "empty"


@pytest.mark.parametrize("e", HAND_PICKED, ids=lambda e: _test_id(sympy.srepr(e)))
def test_matches_sympy_str(e: object) -> None:
    _check(e)


def _random_expr(rng: random.Random, depth: int) -> object:
    leaves = S[:6] + [sympy.Integer(rng.choice([1, 2, 3, 4, 8, 64, -1, -2]))]
    if depth <= 0 or rng.random() < 0.25:
        return rng.choice(leaves)
    kind = rng.choice(["add", "add", "mul", "mul", "sub", "floordiv", "mod", "max", "min",
                       "pow", "neg"])
    a = _random_expr(rng, depth - 1)
    b = _random_expr(rng, depth - 1)
    if kind == "add":
        return a + b
    if kind == "sub":
        return a - b
    if kind == "mul":
        return a * b
    if kind == "floordiv":
        return FloorDiv(a, rng.choice([2, 3, 4, s1]))
    if kind == "mod":
        return Mod(a, rng.choice([2, 3, 8]))
    if kind == "max":
        return Max(a, b)
    if kind == "min":
        return Min(a, b)
    if kind == "pow":
        return a ** rng.choice([2, 3])
    return -a


def test_random_expressions_match_sympy() -> None:
    """Sums, products and torch functions of the kind shape arithmetic builds."""
    rng = random.Random(1234)
    mismatches = []
    checked = 0
    for _ in range(600):
        try:
            e = _random_expr(rng, rng.randint(1, 4))
        except Exception:  # noqa: BLE001 - torch's eval refuses some combinations
            continue
        if not isinstance(e, sympy.Basic):
            continue
        text = sympy.srepr(e)
        checked += 1
        if render_expr(text) != str(e):
            mismatches.append((str(e), render_expr(text), text))
    assert checked > 400
    assert not mismatches, (len(mismatches), checked, mismatches[:10])


# MARKER is replaced by a path in the test's temp folder: the texts that are code
# would create it if anything evaluated them.
HOSTILE = [
    "__import__('os').system('touch MARKER')",
    "Symbol('s0').__class__.__mro__",
    "eval(\"open('MARKER', 'w')\")",
    "lambda: 0",
    "Add(Symbol('s0'), __import__('os').system('touch MARKER'))",
    "Integer(1" * 5000,
    "Add(" * 200 + "Integer(1)" + ")" * 200,
    "Symbol('s0'); import os; os.system('touch MARKER')",
    "[x for x in ().__class__.__base__.__subclasses__()]",
    "Symbol(\"s0\\\"), os.system(\\\"touch MARKER\")",
    "",
]


@pytest.mark.parametrize("text", HOSTILE, ids=range(len(HOSTILE)))
def test_hostile_text_is_returned_not_run(text: str, tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    text = text.replace("MARKER", str(marker))
    out = render_expr(text)
    assert not marker.exists()
    # Nothing here is in the srepr grammar (the deep Add is over the depth
    # limit): each comes back verbatim, to be shown as text.
    assert out == text


def test_hostile_payloads_are_live(tmp_path: Path) -> None:
    """The marker check above can fail: evaluated, the payloads create it."""
    marker = tmp_path / "ran"
    for i in (0, 2):
        eval(HOSTILE[i].replace("MARKER", str(marker)))  # noqa: S307 - the proof
        assert marker.exists(), HOSTILE[i]
        marker.unlink()


def test_unknown_functions_print_like_sympy_functions() -> None:
    assert render_expr("Foo(Symbol('s0', integer=True), Integer(2))") == "Foo(s0, 2)"


def test_symbols_in() -> None:
    e = FloorDiv(s77 * s0 + 1, 2)
    assert sorted(symbols_in(sympy.srepr(e))) == ["s0", "s77"]
    assert symbols_in("not an expression ((") == []


def test_parse_keeps_its_tree_shape() -> None:
    tree = parse_srepr("Add(Symbol('s0', integer=True, positive=True), Integer(2))")
    assert tree.head == "Add" and len(tree.args) == 2


# --- printed text (derived dims' range keys) -------------------------------------

def _value(tree, env):
    """Evaluate a parse_printed tree (test-side only) to compare with sympy."""
    from fractions import Fraction

    from inspector.core.symbolic import Call
    if isinstance(tree, int):
        return Fraction(tree)
    assert isinstance(tree, Call)
    args = [_value(a, env) for a in tree.args] if tree.head != "Name" else []
    ops = {"Add": lambda a, b: a + b, "Mul": lambda a, b: a * b,
           "FloorDiv": lambda a, b: Fraction(a // b), "Mod": lambda a, b: a % b,
           "Pow": lambda a, b: a ** int(b), "Neg": lambda a: -a,
           "Max": lambda *a: max(a), "Min": lambda *a: min(a)}
    return env[tree.args[0]] if tree.head == "Name" else ops[tree.head](*args)


@pytest.mark.parametrize("make", [
    lambda s0, s1: 2 * s0 + 1, lambda s0, s1: 2 * s0, lambda s0, s1: s0 + 1,
    lambda s0, s1: s0 - 1, lambda s0, s1: 3 * s0 - 2, lambda s0, s1: -s0 + 7,
    lambda s0, s1: 4 * s0 + 2 * s1 - 3, lambda s0, s1: s0 * s1 + 1,
    lambda s0, s1: FloorDiv(s0, 2) + 1, lambda s0, s1: Mod(s0, 3),
    lambda s0, s1: s0 ** 2 + s1, lambda s0, s1: sympy.Max(2, s0) - 1,
    lambda s0, s1: sympy.Min(s0, s1 + 1),
])
def test_printed_derived_dims_parse_to_what_sympy_means(make):
    """str() of expressions like torch's derived dims: parse_printed reads the same
    value sympy computes, for several symbol values."""
    from inspector.core.symbolic import parse_printed

    s0, s1 = (sympy.Symbol(n, integer=True, positive=True) for n in ("s40", "s7"))
    e = make(s0, s1)
    tree = parse_printed(str(e))
    for a, b in ((2, 3), (5, 1), (64, 17)):
        assert _value(tree, {"s40": a, "s7": b}) == e.subs({s0: a, s1: b}), str(e)


@pytest.mark.parametrize("text", ["", "s0 +", "a.b", "s0; x", "(s0", "s0)", "1e5",
                                  "'s0'", "s0 = 1", "lambda: 1", "s0[0]", "f(", "x" * 5000,
                                  "(" * 200 + "s0" + ")" * 200, "-" * 300 + "s0"],
                         ids=lambda t: f"{len(t)}_{_test_id(t)}")
def test_printed_text_outside_the_grammar_is_refused(text):
    from inspector.core.symbolic import ExprSyntaxError, parse_printed

    with pytest.raises(ExprSyntaxError):
        parse_printed(text)


# evaluate's heads (its docstring's arithmetic): a tree made of these only must evaluate
_EVALUATED = {"Symbol", "Integer", "Float", "Rational", "Zero", "One", "NegativeOne", "Half",
              "Add", "Mul", "Pow", "PowByNatural", "FloatPow", "Neg", "FloorDiv", "IntTrueDiv",
              "CleanDiv", "CeilDiv", "Mod", "PythonMod", "Max", "Min", "Abs", "floor",
              "FloorToInt", "ceiling", "CeilToInt", "ModularIndexing"}


def _heads(tree: object) -> set[str]:
    from inspector.core.symbolic import Call

    if not isinstance(tree, Call):
        return set()
    found = {tree.head}
    if tree.head != "Symbol":
        for a in tree.args:
            found |= _heads(a)
    return found


def _as_number(v: object) -> object:
    if v in (sympy.true, sympy.false):
        return bool(v)
    return int(v) if v.is_Integer else float(v)


@pytest.mark.parametrize("env", [
    {"s0": 5, "s1": 3, "s9": 7, "s10": 2, "s27": 4, "s77": 6, "s53": 9, "u0": -3, "u1": 2},
    {"s0": 64, "s1": 17, "s9": 2, "s10": 128, "s27": 1, "s77": 3, "s53": 1000, "u0": 11, "u1": -7},
])
def test_evaluate_gives_what_sympy_substitutes(env: dict[str, int]) -> None:
    """evaluate() of each hand-picked expression's srepr against sympy's own subs():
    exact for integers and booleans, to 1e-12 for the rest."""
    from inspector.core.symbolic import ExprSyntaxError, UnresolvedSymbol, evaluate

    subs = {s: env[s.name] for s in S}
    evaluated = 0
    for e in HAND_PICKED:
        tree = parse_srepr(sympy.srepr(e))
        if not _heads(tree) <= _EVALUATED:
            with pytest.raises((ExprSyntaxError, UnresolvedSymbol)):
                evaluate(tree, env)
            continue
        want = _as_number(sympy.sympify(e).subs(subs))
        got = evaluate(tree, env)
        if isinstance(want, int) and not isinstance(got, float):
            assert got == want and int(got) == got, sympy.srepr(e)
        else:
            assert float(got) == pytest.approx(float(want), rel=1e-12), sympy.srepr(e)
        evaluated += 1
    assert evaluated >= 50
    with pytest.raises(UnresolvedSymbol):
        evaluate(parse_srepr("Add(Symbol('s5'), Integer(1))"), env)
