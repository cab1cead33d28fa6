"""Symbolic sizes without sympy: parse `srepr` text, print it as sympy would.

The program JSON stores each symbolic size as sympy's `srepr`, for example
`Add(Symbol('s77', positive=True, integer=True), Integer(2))`. torch hands that
string to `sympify`, which evaluates Python: a file could run code that way. We
parse a small grammar (calls, names, numbers, quoted strings, keyword flags)
into a tree and print it the way sympy's StrPrinter does (`s77 + 2`), which is
what print_readable shows. Anything outside the grammar is shown as raw text,
never evaluated.
"""

from __future__ import annotations

import math
import re
from fractions import Fraction
from functools import lru_cache
from typing import Any

from msgspec import Struct  # C-defined records: cheaper to define than dataclasses

# srepr of real shapes is short (a few hundred characters); this bounds the
# parser's work and recursion on hostile input.
MAX_EXPR_CHARS = 4096
MAX_EXPR_DEPTH = 64

_TOKEN = re.compile(r"""\s*(?:
    (?P<num>-?\d+(?:\.\d*)?(?:[eE][-+]?\d+)?)
  | (?P<name>[A-Za-z_][A-Za-z_0-9]*)
  | (?P<str>'[^'\\]*'|"[^"\\]*")
  | (?P<punct>[(),=\-])
)""", re.VERBOSE)


class ExprSyntaxError(ValueError):
    """Text outside the srepr grammar we accept."""


class Call(Struct, frozen=True):
    head: str
    args: tuple
    kwargs: tuple  # ((name, value), ...)


def parse_srepr(text: str) -> object:
    """srepr text -> tree of Call / int / Fraction / float / str / bool / None."""
    if len(text) > MAX_EXPR_CHARS:
        raise ExprSyntaxError("expression too long")
    tokens = _tokenize(text)
    pos, tree = _parse(tokens, 0, 0)
    if pos != len(tokens):
        raise ExprSyntaxError(f"unexpected {tokens[pos][1]!r}")
    return tree


def _tokenize(text: str, token: re.Pattern[str] = _TOKEN) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    i = 0
    text = text.strip()
    while i < len(text):
        m = token.match(text, i)
        if not m or m.end() == i:
            raise ExprSyntaxError(f"unexpected character {text[i]!r}")
        kind = m.lastgroup
        assert kind is not None
        out.append((kind, m.group(kind)))
        i = m.end()
        while i < len(text) and text[i].isspace():
            i += 1
    return out


def _parse(tokens: list[tuple[str, str]], pos: int, depth: int) -> tuple[int, object]:
    if depth > MAX_EXPR_DEPTH:
        raise ExprSyntaxError("expression nested too deeply")
    if pos >= len(tokens):
        raise ExprSyntaxError("unexpected end")
    kind, text = tokens[pos]
    if kind == "num":
        return pos + 1, (float(text) if any(c in text for c in ".eE") else int(text))
    if kind == "str":
        return pos + 1, text[1:-1]
    if kind == "punct" and text == "-":
        pos, value = _parse(tokens, pos + 1, depth + 1)
        return pos, Call("Neg", (value,), ())
    if kind != "name":
        raise ExprSyntaxError(f"unexpected {text!r}")
    pos += 1
    if pos < len(tokens) and tokens[pos] == ("punct", "("):
        pos += 1
        args: list[object] = []
        kwargs: list[tuple[str, object]] = []
        while pos < len(tokens) and tokens[pos] != ("punct", ")"):
            if (tokens[pos][0] == "name" and pos + 1 < len(tokens)
                    and tokens[pos + 1] == ("punct", "=")):
                key = tokens[pos][1]
                pos, value = _parse(tokens, pos + 2, depth + 1)
                kwargs.append((key, value))
            else:
                pos, value = _parse(tokens, pos, depth + 1)
                args.append(value)
            if pos < len(tokens) and tokens[pos] == ("punct", ","):
                pos += 1
            elif pos >= len(tokens) or tokens[pos] != ("punct", ")"):
                raise ExprSyntaxError("expected ',' or ')'")
        if pos >= len(tokens):
            raise ExprSyntaxError("unclosed '('")
        return pos + 1, Call(text, tuple(args), tuple(kwargs))
    constants = {"True": True, "False": False, "None": None, "true": True, "false": False,
                 "oo": Call("oo", (), ()), "zoo": Call("zoo", (), ()), "nan": Call("nan", (), ()),
                 "int_oo": Call("int_oo", (), ())}
    if text in constants:
        return pos, constants[text]
    return pos, Call("Name", (text,), ())


# --- printed text -------------------------------------------------------------
# torch keys the ranges of derived dims (`torch.export.Dim` arithmetic) by the
# expression as sympy prints it (`2*s40 + 1`), not by srepr. This reads that text
# into the same Call tree parse_srepr gives (Add, Mul, Pow, FloorDiv, Mod, Neg,
# Name, ints, and calls such as `Max(s0, s1)`), so one checker vets both forms.

_PRINTED_TOKEN = re.compile(r"\s*(?:(?P<num>\d+)|(?P<name>[A-Za-z_][A-Za-z_0-9]*)"
                            r"|(?P<op>\*\*|//|[-+*/%(),]))")


def parse_printed(text: str) -> object:
    """Printed sympy arithmetic (`2*s40 + 1`, `(s0//2)`, `Max(1, s3)`) -> Call tree.
    Raises ExprSyntaxError outside that grammar; never evaluates anything."""
    if len(text) > MAX_EXPR_CHARS:
        raise ExprSyntaxError("expression too long")
    tokens = _tokenize(text, _PRINTED_TOKEN)
    if not tokens:
        raise ExprSyntaxError("empty expression")
    pos, tree = _printed_sum(tokens, 0, 0)
    if pos != len(tokens):
        raise ExprSyntaxError(f"unexpected {tokens[pos][1]!r}")
    return tree


def _peek(tokens: list[tuple[str, str]], pos: int) -> str | None:
    return tokens[pos][1] if pos < len(tokens) and tokens[pos][0] == "op" else None


def _printed_sum(tokens: list[tuple[str, str]], pos: int, depth: int) -> tuple[int, object]:
    if depth > MAX_EXPR_DEPTH:
        raise ExprSyntaxError("expression nested too deeply")
    pos, left = _printed_product(tokens, pos, depth + 1)
    while (op := _peek(tokens, pos)) in ("+", "-"):
        pos, right = _printed_product(tokens, pos + 1, depth + 1)
        left = Call("Add", (left, right if op == "+" else Call("Neg", (right,), ())), ())
    return pos, left


_PRODUCT_HEADS = {"*": "Mul", "//": "FloorDiv", "%": "Mod"}


def _printed_product(tokens: list[tuple[str, str]], pos: int, depth: int) -> tuple[int, object]:
    pos, left = _printed_unary(tokens, pos, depth + 1)
    while (op := _peek(tokens, pos)) in ("*", "/", "//", "%"):
        pos, right = _printed_unary(tokens, pos + 1, depth + 1)
        if op == "/":
            right, op = Call("Pow", (right, -1), ()), "*"
        left = Call(_PRODUCT_HEADS[op], (left, right), ())
    return pos, left


def _printed_unary(tokens: list[tuple[str, str]], pos: int, depth: int) -> tuple[int, object]:
    if depth > MAX_EXPR_DEPTH:
        raise ExprSyntaxError("expression nested too deeply")
    if _peek(tokens, pos) == "-":
        pos, value = _printed_unary(tokens, pos + 1, depth + 1)
        return pos, Call("Neg", (value,), ())
    pos, base = _printed_atom(tokens, pos, depth + 1)
    if _peek(tokens, pos) == "**":
        pos, exp = _printed_unary(tokens, pos + 1, depth + 1)
        return pos, Call("Pow", (base, exp), ())
    return pos, base


def _printed_atom(tokens: list[tuple[str, str]], pos: int, depth: int) -> tuple[int, object]:
    if pos >= len(tokens):
        raise ExprSyntaxError("unexpected end")
    kind, text = tokens[pos]
    if kind == "num":
        return pos + 1, int(text)
    if (kind, text) == ("op", "("):
        pos, inner = _printed_sum(tokens, pos + 1, depth + 1)
        if _peek(tokens, pos) != ")":
            raise ExprSyntaxError("unclosed '('")
        return pos + 1, inner
    if kind != "name":
        raise ExprSyntaxError(f"unexpected {text!r}")
    if _peek(tokens, pos + 1) != "(":
        return pos + 1, Call("Name", (text,), ())
    pos += 2
    args: list[object] = []
    while True:
        pos, arg = _printed_sum(tokens, pos, depth + 1)
        args.append(arg)
        op = _peek(tokens, pos)
        if op == ")":
            return pos + 1, Call(text, tuple(args), ())
        if op != ",":
            raise ExprSyntaxError("expected ',' or ')'")
        pos += 1


# --- evaluating ----------------------------------------------------------------

class UnresolvedSymbol(Exception):
    """A symbol the environment gives no value."""

    def __init__(self, symbol: str) -> None:
        super().__init__(symbol)
        self.symbol = symbol


def symbol_name(tree: object) -> str | None:
    if isinstance(tree, Call) and tree.head in ("Symbol", "Name") and tree.args \
            and isinstance(tree.args[0], str):
        return tree.args[0]
    return None


def evaluate(tree: object, env: dict[str, int]) -> int | Fraction | float | bool:
    """The value of a parse_srepr / parse_printed tree with symbols from `env`
    (arithmetic only: nothing from the file is run); UnresolvedSymbol for a symbol
    `env` lacks, ExprSyntaxError for a head it cannot evaluate."""
    if isinstance(tree, bool):
        return tree
    if isinstance(tree, (int, float, Fraction)):
        return tree
    if not isinstance(tree, Call):
        raise ExprSyntaxError(f"unexpected {tree!r}")
    head, args = tree.head, tree.args
    name = symbol_name(tree)
    if name is not None:
        if name not in env:
            raise UnresolvedSymbol(name)
        return env[name]
    if head in ("Integer", "Float") and len(args) == 1:
        return int(args[0]) if head == "Integer" else float(args[0])
    if head == "Rational" and len(args) == 2:
        return Fraction(int(args[0]), int(args[1]))
    if head in ("Zero", "One", "NegativeOne", "Half"):
        return {"Zero": 0, "One": 1, "NegativeOne": -1, "Half": Fraction(1, 2)}[head]
    vals = [evaluate(a, env) for a in args]
    if head == "Add":
        return sum(vals[1:], vals[0])
    if head == "Mul":
        out = vals[0]
        for v in vals[1:]:
            out = out * v
        return out
    if head in ("Pow", "PowByNatural", "FloatPow") and len(vals) == 2:
        return vals[0] ** vals[1]
    if head == "Neg" and len(vals) == 1:
        return -vals[0]
    if head in ("FloorDiv", "IntTrueDiv", "CleanDiv") and len(vals) == 2:
        return vals[0] // vals[1] if head != "IntTrueDiv" else Fraction(vals[0]) / vals[1]
    if head == "CeilDiv" and len(vals) == 2:
        return -((-vals[0]) // vals[1])
    if head in ("Mod", "PythonMod") and len(vals) == 2:
        return vals[0] % vals[1]
    if head == "Max":
        return max(vals)
    if head == "Min":
        return min(vals)
    if head == "Abs" and len(vals) == 1:
        return abs(vals[0])
    if head in ("floor", "FloorToInt") and len(vals) == 1:
        return int(vals[0] // 1)
    if head in ("ceiling", "CeilToInt") and len(vals) == 1:
        return -int((-vals[0]) // 1)
    if head == "ModularIndexing" and len(vals) == 3:
        return (vals[0] // vals[1]) % vals[2]
    raise ExprSyntaxError(f"cannot evaluate {head}")


# --- printing -----------------------------------------------------------------
# A re-implementation of what sympy's StrPrinter (plus torch's own _sympystr
# and `precedence` attributes) does with the expression classes that torch
# writes: the same term order (Expr.as_ordered_terms), factor order
# (as_ordered_factors, by sort_key), precedences and parentheses. Checked
# against sympy itself in tests/unit/test_symbolic.py.


class _Sym(Struct, frozen=True):
    name: str


class _Float(Struct, frozen=True):
    value: float


class _Special(Struct, frozen=True):
    """oo, -oo, int_oo, -int_oo, zoo, nan, and named constants (pi, E)."""
    text: str


class _Fn(Struct, frozen=True):
    head: str  # Add, Mul, Pow, FloorDiv, Max, StrictLessThan, And, ...
    args: tuple


_NAMED_CONSTANTS = {"pi", "E", "I", "EulerGamma", "Catalan", "GoldenRatio"}
_NUMBER_CK = (1, 0, "Number")
_ONE_KEY = (_NUMBER_CK, (0, ()), (), 1)
_SPECIAL_VALUES = {"oo": math.inf, "-oo": -math.inf, "int_oo": math.inf, "-int_oo": -math.inf}
# sympy.printing.precedence.PRECEDENCE
_P_OR, _P_AND, _P_REL, _P_ADD, _P_MUL, _P_POW, _P_FUNC, _P_NOT, _P_ATOM = \
    20, 30, 35, 40, 50, 60, 70, 100, 1000
# `precedence` class attributes of torch.utils._sympy.functions
_TORCH_PRECEDENCE = {
    "FloorDiv": 35, "CleanDiv": 35, "ModularIndexing": 35, "Where": 35, "PythonMod": 35,
    "Mod": 35, "FloatTrueDiv": 35, "IntTrueDiv": 35, "PowByNatural": 50, "FloatPow": 60,
    "Identity": 10, "BitwiseFn_bitwise_and": 38, "BitwiseFn_bitwise_or": 36,
    "BitwiseFn_bitwise_xor": 37,
}
_RELATIONS = {"StrictLessThan": "<", "LessThan": "<=",
              "StrictGreaterThan": ">", "GreaterThan": ">="}
_EQUALITIES = {"Equality": "Eq", "Unequality": "Ne"}
_BOOLEAN_OPS = {"And", "Or", "Not", "Xor"}
_LATTICE = {"Max", "Min"}
# Function.class_key: (4, i, name); i from sympy's table, 0 for variadic ones
_FUNC_INDEX = {"exp": 10, "log": 11, "sin": 20, "cos": 21, "tan": 22, "cot": 23,
               "sinh": 30, "cosh": 31, "tanh": 32, "coth": 33, "conjugate": 40, "re": 41,
               "im": 42, "arg": 43, "Identity": 0, "CeilDiv": 0,
               "IsNonOverlappingAndDenseIndicator": 0}
_NOT_FUNCTIONS = {"Add", "Mul", "Pow"} | set(_RELATIONS) | set(_EQUALITIES) | _BOOLEAN_OPS | _LATTICE


def _to_expr(tree: object) -> object:
    """Parsed srepr -> int / Fraction / _Float / _Sym / _Special / bool / _Fn."""
    if isinstance(tree, bool) or tree is None:
        return tree
    if isinstance(tree, int):
        return tree
    if isinstance(tree, float):
        return _Float(tree)
    if not isinstance(tree, Call):
        # quoted strings belong inside Symbol('s0') / Float('2.5') only
        raise ExprSyntaxError("unexpected value")
    h, a = tree.head, tree.args
    if h.startswith("_"):
        raise ExprSyntaxError(f"unexpected name {h!r}")
    if h == "Integer" and len(a) == 1 and isinstance(a[0], int) and not isinstance(a[0], bool):
        return a[0]
    if h == "Rational" and len(a) == 2 and all(isinstance(x, int) for x in a) and a[1]:
        r = Fraction(a[0], a[1])
        return r.numerator if r.denominator == 1 else r
    if h == "Float" and len(a) >= 1 and isinstance(a[0], (str, int, float)):
        return _Float(float(a[0]))
    if h in ("Symbol", "Dummy") and len(a) == 1 and isinstance(a[0], str):
        return _Sym(a[0])
    if h in ("oo", "zoo", "nan", "int_oo"):
        return _Special(h)
    if h == "Name" and len(a) == 1 and a[0] in _NAMED_CONSTANTS:
        return _Special(str(a[0]))
    if h == "Name":
        raise ExprSyntaxError(f"unexpected name {a[0]!r}")
    if h in ("One", "Zero", "NegativeOne", "Half"):
        return {"One": 1, "Zero": 0, "NegativeOne": -1, "Half": Fraction(1, 2)}[h]
    if h == "Neg" and len(a) == 1:
        inner = _to_expr(a[0])
        if isinstance(inner, _Special) and inner.text in ("oo", "int_oo"):
            return _Special("-" + inner.text)
        if _is_num(inner):
            return -inner  # type: ignore[operator]
        return _Fn("Mul", (-1, inner))
    if tree.kwargs and h not in ("Symbol", "Dummy", "Float"):
        raise ExprSyntaxError(f"unexpected keywords in {h}")
    args = tuple(_to_expr(x) for x in a)
    if h == "Mul":
        args = _fold_coefficient(args)
    return _Fn(h, args)


def _fold_coefficient(args: tuple) -> tuple:
    """srepr writes `-2*s0` as Mul(Integer(-1), Integer(2), s0) (args_cnc splits
    the sign off); sympy's Mul holds one leading coefficient."""
    nums = [x for x in args if _is_rational(x) or isinstance(x, _Float)]
    if len(nums) < 2:
        return args
    coeff: Any = 1
    for x in nums:
        coeff = coeff * (x.value if isinstance(x, _Float) else x)
    if isinstance(coeff, float):
        coeff = _Float(coeff)
    elif isinstance(coeff, Fraction) and coeff.denominator == 1:
        coeff = coeff.numerator
    rest = tuple(x for x in args if not (_is_rational(x) or isinstance(x, _Float)))
    return rest if coeff == 1 else (coeff,) + rest


def _is_num(x: object) -> bool:
    return (isinstance(x, (int, Fraction, _Float)) and not isinstance(x, bool)) or \
        (isinstance(x, _Special) and x.text in _SPECIAL_VALUES)


def _value(x: object) -> float | int | Fraction:
    if isinstance(x, _Float):
        return x.value
    if isinstance(x, _Special):
        return _SPECIAL_VALUES.get(x.text, 0)
    return x  # type: ignore[return-value]


def _is_rational(x: object) -> bool:
    return isinstance(x, (int, Fraction)) and not isinstance(x, bool)


def _mul(args: list) -> object:
    if not args:
        return 1
    return args[0] if len(args) == 1 else _Fn("Mul", tuple(args))


def _coeff_mul(x: object) -> tuple[object, object]:
    """Expr.as_coeff_Mul: (leading number, the rest)."""
    if _is_num(x):
        return x, 1
    if isinstance(x, _Fn) and x.head == "Mul" and x.args and _is_num(x.args[0]):
        return x.args[0], _mul(list(x.args[1:]))
    return 1, x


def _class_key(x: object) -> tuple:
    if _is_num(x):
        return _NUMBER_CK
    if isinstance(x, _Sym):
        return (2, 0, "Symbol")
    if isinstance(x, bool):
        return (5, 0, "BooleanTrue" if x else "BooleanFalse")
    if isinstance(x, _Fn):
        if x.head in ("Mul", "Add", "Pow"):
            return (3, ("Mul", "Add", "Pow").index(x.head), x.head)
        if x.head in _NOT_FUNCTIONS:
            return (5, 0, x.head)
        return (4, _FUNC_INDEX.get(x.head, 10000), x.head)
    return (2, 0, "Atom")


# Memoized: sorting a Mul/Add computes its children's keys, and each child's key
# sorts its own children again, so without a cache the work doubles per level
# (a hostile 60-level `Mul(Mul(...))` took hours). Trees are frozen, so hashable.
@lru_cache(maxsize=65536, typed=True)
def _sort_key(x: object) -> tuple:
    """sympy's default_sort_key (Expr.sort_key / Symbol.sort_key / Basic.sort_key)."""
    if _is_num(x):
        return (_NUMBER_CK, (0, ()), (), _value(x))
    if isinstance(x, _Sym):
        return ((2, 0, "Symbol"), (1, (x.name,)), _ONE_KEY, 1)
    if not isinstance(x, _Fn):
        return (_class_key(x), (0, ()), _ONE_KEY, 1)
    if x.head in _NOT_FUNCTIONS - {"Add", "Mul", "Pow"} - _LATTICE:  # Basic, not Expr
        return (_class_key(x), (len(x.args), tuple(_sort_key(a) for a in x.args)), _ONE_KEY, 1)
    coeff, expr = _coeff_mul(x)
    exp: object = 1
    if isinstance(expr, _Fn) and expr.head == "Pow" and len(expr.args) == 2:
        expr, exp = expr.args
    if not isinstance(expr, _Fn):
        args: tuple = (_print(expr, 2),)
    else:
        if expr.head == "Add":
            items = _ordered_terms(expr)
        elif expr.head == "Mul":
            items = _ordered_factors(expr)
        else:
            items = list(expr.args)
        args = tuple(_sort_key(a) for a in items)
    return (_class_key(expr), (len(args), args), _sort_key(exp), _value(coeff))


def _sorted(items: list, key: Any) -> list:
    try:
        return sorted(items, key=key)
    except TypeError:  # keys of unusual trees that do not compare: keep srepr order
        return list(items)


def _ordered_factors(m: _Fn) -> list:
    return _sorted(list(m.args), _sort_key)


def _decompose_power(f: object) -> tuple[object, object]:
    if isinstance(f, _Fn) and f.head == "Pow" and len(f.args) == 2:
        base, exp = f.args
        if isinstance(exp, int):
            return base, exp
        if isinstance(exp, Fraction):
            return _Fn("Pow", (base, Fraction(1, exp.denominator))), exp.numerator
        c, tail = _coeff_mul(exp)
        if c == -1 and not _is_num(exp):
            return _Fn("Pow", (base, tail)), -1
    return f, 1


def _ordered_terms(add: _Fn) -> list:
    """Expr.as_ordered_terms() with the default (lex) order."""
    args = list(add.args)
    if len(args) == 2:
        nums_first = sorted(args, key=lambda t: not _is_num(t))
        a0, a1 = nums_first
        if _is_num(a0) and isinstance(a1, _Fn) and a1.head == "Mul":
            margs = sorted(a1.args, key=lambda t: not _is_num(t))
            if (len(margs) == 2 and _is_num(margs[0]) and _value(a0) > 0
                    and _value(margs[0]) < 0):
                return nums_first
    terms = []
    gens: dict[object, None] = {}
    for term in args:
        coeff, rest = _coeff_mul(term)
        cpart: dict[object, object] = {}
        if rest != 1:
            factors = rest.args if isinstance(rest, _Fn) and rest.head == "Mul" else (rest,)
            for f in factors:
                base, exp = _decompose_power(f)
                cpart[base] = exp
                gens[base] = None
        terms.append((term, _value(coeff), cpart))
    order = _sorted(list(gens), _sort_key)
    index = {g: i for i, g in enumerate(order)}

    def key(item: tuple) -> tuple:
        _, coeff, cpart = item
        monom = [0] * len(order)
        for base, exp in cpart.items():
            monom[index[base]] = exp
        return (tuple(-m for m in monom), (), ((False, 0), (coeff, 0)))
    return [t for t, _, _ in _sorted(terms, key)]


def _precedence(x: object) -> float:
    if _is_num(x):
        if isinstance(x, _Special):
            return _P_ADD if x.text == "-oo" else _P_ATOM
        v = _value(x)
        if isinstance(x, Fraction):
            return _P_ADD if v < 0 else _P_MUL
        return _P_ADD if v < 0 else _P_ATOM
    if not isinstance(x, _Fn):
        return _P_ATOM
    h = x.head
    if h in _TORCH_PRECEDENCE:
        return _TORCH_PRECEDENCE[h]
    if h == "Add":
        return _P_ADD
    if h == "Mul":
        if any(isinstance(a, _Fn) and _TORCH_PRECEDENCE.get(a.head, _P_MUL) < _P_MUL for a in x.args):
            return _P_MUL
        return _P_ADD if x.args and _is_num(x.args[0]) and _value(x.args[0]) < 0 else _P_MUL
    if h == "Pow":
        return _P_POW
    if h in _RELATIONS:
        return _P_REL
    if h in _EQUALITIES:
        return _P_MUL
    if h in ("And", "Or", "Not", "Xor"):
        return {"And": _P_AND, "Or": _P_OR, "Not": _P_NOT, "Xor": 10}[h]
    if h in _LATTICE:
        return _P_ATOM
    return _P_FUNC


def _paren(x: object, level: float, depth: int, strict: bool = False) -> str:
    p = _precedence(x)
    text = _print(x, depth + 1)
    return f"({text})" if (p < level or (not strict and p <= level)) else text


def _float_text(v: float, strip: bool) -> str:
    """mpmath's to_str(mpf, dps=15) as sympy's StrPrinter calls it."""
    if v == 0:
        return "0.0"
    if math.isinf(v) or math.isnan(v):
        return {math.inf: "inf", -math.inf: "-inf"}.get(v, "nan")
    sign = "-" if v < 0 else ""
    mant, _, exp_text = f"{abs(v):.14e}".partition("e")
    digits, exponent = mant.replace(".", ""), int(exp_text)
    if -5 < exponent < 15:
        if exponent < 0:
            digits, split = "0" * -exponent + digits, 1
        else:
            split = exponent + 1
        exponent = 0
    else:
        split = 1
    text = digits[:split] + "." + digits[split:]
    if strip:
        text = text.rstrip("0")
        if text.endswith("."):
            text += "0"
    if exponent == 0:
        return sign + text
    return f"{sign}{text}e{'+' if exponent > 0 else ''}{exponent}"


def _print(x: object, depth: int = 1) -> str:
    if x is None:
        return "None"
    if isinstance(x, bool):
        return "True" if x else "False"
    if isinstance(x, int):
        return str(x)
    if isinstance(x, Fraction):
        return f"{x.numerator}/{x.denominator}"
    if isinstance(x, _Float):
        return _float_text(x.value, depth > 1)
    if isinstance(x, _Sym):
        return x.name
    if isinstance(x, _Special):
        return x.text
    if not isinstance(x, _Fn):
        return str(x)
    h, a = x.head, x.args
    if h == "Add":
        return _print_add(x, depth)
    if h == "Mul":
        return _print_mul(x, depth)
    if h == "Pow" and len(a) == 2:
        return _print_pow(x, depth)
    if h in ("FloorDiv", "CleanDiv") and len(a) == 2:
        return f"({_paren(a[0], _P_ATOM - 0.5, depth)}//{_paren(a[1], _P_ATOM - 0.5, depth)})"
    if h == "Identity" and len(a) == 1:
        return f"({_print(a[0], depth + 1)})"
    if h in _EQUALITIES and len(a) == 2:
        return f"{_EQUALITIES[h]}({_print(a[0], depth + 1)}, {_print(a[1], depth + 1)})"
    if h in _RELATIONS and len(a) == 2:
        return f"{_paren(a[0], _P_REL, depth)} {_RELATIONS[h]} {_paren(a[1], _P_REL, depth)}"
    if h in ("And", "Or"):
        level = 38 if h == "And" else 36
        sep = " & " if h == "And" else " | "
        return sep.join(_paren(t, level, depth) for t in a)
    if h == "Not" and len(a) == 1:
        return f"~{_paren(a[0], _P_NOT, depth)}"
    if h in _LATTICE:
        args = _sorted(list(a), _sort_key)
        return f"{h}({', '.join(_print(t, depth + 1) for t in args)})"
    return f"{h}({', '.join(_print(t, depth + 1) for t in a)})"


def _print_add(x: _Fn, depth: int) -> str:
    prec = _P_ADD
    parts: list[str] = []
    for term in _ordered_terms(x):
        t = _print(term, depth + 1)
        is_add = isinstance(term, _Fn) and term.head == "Add"
        if t.startswith("-") and not is_add:
            sign, t = "-", t[1:]
        else:
            sign = "+"
        if _precedence(term) < prec or is_add:
            t = f"({t})"
        parts.extend([sign, t])
    sign = parts.pop(0)
    return ("" if sign == "+" else sign) + " ".join(parts)


def _print_mul(x: _Fn, depth: int) -> str:
    prec = _precedence(x)
    coeff, rest = _coeff_mul(x)
    sign = ""
    expr: object = x
    if _value(coeff) < 0:
        sign = "-"
        pos = -_value(coeff) if not isinstance(coeff, _Special) else _Special(coeff.text[1:])
        if isinstance(coeff, _Float):
            pos = _Float(-coeff.value)
        expr = _mul(([] if pos == 1 else [pos]) +
                    (list(rest.args) if isinstance(rest, _Fn) and rest.head == "Mul" else
                     ([] if rest == 1 else [rest])))
    factors = _ordered_factors(expr) if isinstance(expr, _Fn) and expr.head == "Mul" else [expr]
    num: list[object] = []
    den: list[object] = []
    paren_den: list[object] = []
    for f in factors:
        if isinstance(f, _Fn) and f.head == "Pow" and len(f.args) == 2 and \
                _value(_coeff_mul(f.args[1])[0]) < 0:
            base, exp = f.args
            if exp == -1:
                if isinstance(base, _Fn) and base.head in ("Mul", "Pow") and len(base.args) != 1:
                    paren_den.append(base)
                den.append(base)
            else:
                c, tail = _coeff_mul(exp)
                negated = -c if not _is_num(exp) else -exp  # type: ignore[operator]
                new_exp = negated if _is_num(exp) else _mul(([] if negated == 1 else [negated]) +
                                                            [tail])
                den.append(_Fn("Pow", (base, new_exp)))
        elif _is_rational(f):
            r = Fraction(f)  # type: ignore[arg-type]
            if r.numerator != 1:
                num.append(r.numerator)
            if r.denominator != 1:
                den.append(r.denominator)
        else:
            num.append(f)
    num = num or [1]
    a_str = [_paren(f, prec, depth) for f in num]
    b_str = [_paren(f, prec, depth) for f in den]
    for item in paren_den:
        i = den.index(item)
        b_str[i] = f"({b_str[i]})"
    if not den:
        return sign + "*".join(a_str)
    if len(den) == 1:
        return sign + "*".join(a_str) + "/" + b_str[0]
    return sign + "*".join(a_str) + "/(" + "*".join(b_str) + ")"


def _print_pow(x: _Fn, depth: int) -> str:
    base, exp = x.args
    if exp == Fraction(1, 2):
        return f"sqrt({_print(base, depth + 1)})"
    if exp == Fraction(-1, 2):
        return f"1/sqrt({_print(base, depth + 1)})"
    if exp == -1 and not isinstance(exp, _Float):
        return f"1/{_paren(base, _P_POW, depth)}"
    return f"{_paren(base, _P_POW, depth)}**{_paren(exp, _P_POW, depth)}"


def clear_caches() -> None:
    """Forget the memoized renderings and sort keys (tests: each computes afresh)."""
    render_expr.cache_clear()
    _sort_key.cache_clear()


@lru_cache(maxsize=65536)
def render_expr(srepr_text: str) -> str:
    """`Add(Symbol('s77', ...), Integer(2))` -> `s77 + 2`; unparseable text is
    returned unchanged (shown, never evaluated)."""
    try:
        return _print(_to_expr(parse_srepr(srepr_text)))
    except (ExprSyntaxError, RecursionError, ZeroDivisionError, TypeError, ValueError,
            OverflowError):
        return srepr_text


def symbols_in(srepr_text: str) -> list[str]:
    """Names of the Symbols an expression mentions (for range look-ups)."""
    try:
        tree = parse_srepr(srepr_text)
    except (ExprSyntaxError, RecursionError):
        return []
    found: list[str] = []

    def walk(t: object) -> None:
        if isinstance(t, Call):
            if t.head == "Symbol" and t.args and isinstance(t.args[0], str):
                if t.args[0] not in found:
                    found.append(t.args[0])
            for x in t.args:
                walk(x)
    walk(tree)
    return found


_RELATION_WORDS = {"Eq": "==", "Ne": "!="}


def render_condition(text: str) -> str:
    """A rendered condition as a person reads it: sympy prints equalities as
    `Eq(s0, 2*s1)`; this gives `s0 == 2*s1` (also inside `&`/`|` chains).
    Works on the printed text (already made safe by render_expr); never evaluates."""
    parts = _split_top(text, " & ")
    if len(parts) > 1:
        # an `|` chain inside an `&` keeps its parentheses: `a & (b | c)` is not `a & b | c`
        return " & ".join(_parenthesize_or(render_condition(_unwrap(p))) for p in parts)
    parts = _split_top(text, " | ")
    if len(parts) > 1:
        return " | ".join(render_condition(_unwrap(p)) for p in parts)
    head = text[:2]
    if head in _RELATION_WORDS and text[2:3] == "(" and text.endswith(")") \
            and _closing(text, 2) == len(text) - 1:
        args = _split_top(text[3:-1], ", ")
        if len(args) == 2:
            return f"{args[0]} {_RELATION_WORDS[head]} {args[1]}"
    return text


def _parenthesize_or(text: str) -> str:
    return f"({text})" if len(_split_top(text, " | ")) > 1 else text


def _closing(text: str, start: int) -> int:
    depth = 0
    for i in range(start, len(text)):
        if text[i] == "(":
            depth += 1
        elif text[i] == ")":
            depth -= 1
            if depth == 0:
                return i
    return -1


def _split_top(text: str, sep: str) -> list[str]:
    """Split at `sep` outside parentheses."""
    parts, depth, start, i = [], 0, 0, 0
    while i < len(text):
        c = text[i]
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
        elif depth == 0 and text.startswith(sep, i):
            parts.append(text[start:i])
            i += len(sep)
            start = i
            continue
        i += 1
    parts.append(text[start:])
    return parts


def _unwrap(text: str) -> str:
    if text.startswith("(") and _closing(text, 0) == len(text) - 1:
        return text[1:-1]
    return text
