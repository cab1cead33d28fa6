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

import re
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache

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


@dataclass(frozen=True, slots=True)
class Call:
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


def _tokenize(text: str) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    i = 0
    text = text.strip()
    while i < len(text):
        m = _TOKEN.match(text, i)
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


# --- printing -----------------------------------------------------------------
# Precedences as in sympy.printing.precedence.
_PREC_ATOM, _PREC_POW, _PREC_MUL, _PREC_ADD = 1000, 60, 50, 40
_PREC_REL, _PREC_AND, _PREC_OR = 35, 30, 20
_FUNCTION_NAMES = {"Equality": "Eq", "Unequality": "Ne"}
_RELATIONS = {"StrictLessThan": "<", "LessThan": "<=",
              "StrictGreaterThan": ">", "GreaterThan": ">="}


def _norm(tree: object) -> object:
    """Fold srepr's number wrappers into Python numbers."""
    if isinstance(tree, Call):
        h, a = tree.head, tree.args
        if h == "Integer" and len(a) == 1 and isinstance(a[0], int):
            return a[0]
        if h in ("Rational",) and len(a) == 2 and all(isinstance(x, int) for x in a) and a[1]:
            return Fraction(a[0], a[1])
        if h == "Float" and a:
            try:
                return float(a[0])
            except (TypeError, ValueError):
                return tree
        if h in ("One",):
            return 1
        if h in ("Zero",):
            return 0
        if h in ("NegativeOne",):
            return -1
        if h == "Half":
            return Fraction(1, 2)
        if h == "Neg" and len(a) == 1:
            inner = _norm(a[0])
            if isinstance(inner, (int, float, Fraction)) and not isinstance(inner, bool):
                return -inner
            return Call("Mul", (-1, inner), ())
        return Call(h, tuple(_norm(x) for x in a), tree.kwargs)
    return tree


def _is_num(x: object) -> bool:
    return isinstance(x, (int, float, Fraction)) and not isinstance(x, bool)


def _prec(x: object) -> int:
    if _is_num(x):
        if isinstance(x, Fraction) and x.denominator != 1:
            return _PREC_MUL
        return _PREC_ADD if x < 0 else _PREC_ATOM
    if isinstance(x, Call):
        if x.head == "Add":
            return _PREC_ADD
        if x.head == "Mul":
            coeff, _ = _split_coeff(x)
            return _PREC_ADD if coeff < 0 else _PREC_MUL
        if x.head == "Pow":
            return _PREC_POW
        if x.head in _RELATIONS:
            return _PREC_REL
        if x.head == "And":
            return _PREC_AND
        if x.head == "Or":
            return _PREC_OR
    return _PREC_ATOM


def _paren(x: object, level: int, strict: bool = False) -> str:
    text = _print(x)
    p = _prec(x)
    return f"({text})" if (p < level or (strict and p <= level)) else text


def _num_text(x: object) -> str:
    if isinstance(x, Fraction):
        return str(x.numerator) if x.denominator == 1 else f"{x.numerator}/{x.denominator}"
    if isinstance(x, float):
        return repr(x)
    return str(x)


def _split_coeff(m: Call) -> tuple[Fraction | int | float, list[object]]:
    coeff: Fraction | int | float = 1
    rest: list[object] = []
    for a in m.args:
        if _is_num(a):
            coeff = coeff * a
        else:
            rest.append(a)
    return coeff, rest


def _symbols_degree(term: object) -> dict[str, int]:
    """Monomial exponents of a term, for sympy-like term ordering."""
    if isinstance(term, Call):
        if term.head == "Symbol" and term.args:
            return {str(term.args[0]): 1}
        if term.head == "Mul":
            out: dict[str, int] = {}
            for a in term.args:
                for k, v in _symbols_degree(a).items():
                    out[k] = out.get(k, 0) + v
            return out
        if term.head == "Pow" and len(term.args) == 2 and isinstance(term.args[1], int):
            return {k: v * term.args[1] for k, v in _symbols_degree(term.args[0]).items()}
        # a function of symbols orders like a symbol named by its printout
        return {_print(term): 1}
    return {}


def _add_order(terms: tuple) -> list[object]:
    """Approximates sympy's `as_ordered_terms`: higher total degree first,
    then lexicographic on symbol names; numbers last."""
    def key(t: object) -> tuple:
        deg = _symbols_degree(t)
        if not deg:
            return (1, 0, ())
        mono = sorted(deg.items())
        return (0, -sum(deg.values()), tuple((name, -e) for name, e in mono))
    return sorted(terms, key=key)


def _print(x: object) -> str:
    if x is None:
        return "None"
    if isinstance(x, bool):
        return "True" if x else "False"
    if _is_num(x):
        return _num_text(x)
    if isinstance(x, str):
        return x
    if not isinstance(x, Call):
        return str(x)
    h, a = x.head, x.args
    if h == "Symbol" and a:
        return str(a[0])
    if h == "Name" and a:
        return str(a[0])
    if h in ("oo", "int_oo"):
        return h
    if h in ("zoo", "nan"):
        return h
    if h == "Add":
        terms = _add_order(a)
        # sympy keeps `c - k*x` (a positive number, then a two-factor product
        # with a negative coefficient) in that order: as_ordered_terms' special case
        if len(a) == 2:
            nums = [t for t in a if _is_num(t)]
            muls = [t for t in a if isinstance(t, Call) and t.head == "Mul"]
            if (len(nums) == 1 and len(muls) == 1 and nums[0] > 0
                    and _split_coeff(muls[0])[0] < 0 and len(_split_coeff(muls[0])[1]) == 1):
                terms = [nums[0], muls[0]]
        out = ""
        for i, t in enumerate(terms):
            text = _print(t)
            neg = text.startswith("-")
            if i == 0:
                out = text
            elif neg:
                out += " - " + text[1:]
            else:
                out += " + " + text
        return out
    if h == "Mul":
        coeff, rest = _split_coeff(x)
        sign = ""
        if coeff < 0:
            sign, coeff = "-", -coeff
        num_parts: list[str] = []
        den_parts: list[str] = []
        if isinstance(coeff, Fraction) and coeff.denominator != 1:
            if coeff.numerator != 1:
                num_parts.append(str(coeff.numerator))
            den_parts.append(str(coeff.denominator))
        elif coeff != 1:
            num_parts.append(_num_text(coeff))
        for f in sorted(rest, key=lambda t: _print(t)):
            if isinstance(f, Call) and f.head == "Pow" and len(f.args) == 2 \
                    and _is_num(f.args[1]) and f.args[1] < 0:
                exp = -f.args[1]
                den_parts.append(_paren(f.args[0], _PREC_POW, True) if exp == 1
                                 else f"{_paren(f.args[0], _PREC_POW, True)}**{_num_text(exp)}")
            else:
                num_parts.append(_paren(f, _PREC_MUL))
        num = "*".join(num_parts) or "1"
        if den_parts:
            den = den_parts[0] if len(den_parts) == 1 else "(" + "*".join(den_parts) + ")"
            return f"{sign}{num}/{den}"
        return sign + num
    if h == "Pow" and len(a) == 2:
        base, exp = a
        if exp == Fraction(1, 2):
            return f"sqrt({_print(base)})"
        if _is_num(exp) and exp == -1:
            return f"1/{_paren(base, _PREC_POW, True)}"
        return f"{_paren(base, _PREC_POW, True)}**{_paren(exp, _PREC_POW, True)}"
    if h in ("FloorDiv", "CleanDiv") and len(a) == 2:
        return f"({_paren(a[0], _PREC_ATOM - 1)}//{_paren(a[1], _PREC_ATOM - 1)})"
    if h == "Identity" and len(a) == 1:
        return f"({_print(a[0])})"
    if h in _RELATIONS and len(a) == 2:
        return f"{_paren(a[0], _PREC_REL)} {_RELATIONS[h]} {_paren(a[1], _PREC_REL)}"
    if h in ("And", "Or") and a:
        op = " & " if h == "And" else " | "
        return op.join(f"({_print(t)})" if _prec(t) <= _PREC_REL else _paren(t, _prec(x), True)
                       for t in sorted(a, key=_print))
    if h == "Not" and len(a) == 1:
        return f"~{_paren(a[0], _PREC_ATOM)}"
    if h in ("Max", "Min"):
        args = sorted(a, key=lambda t: (not _is_num(t), _print(t)))
        return f"{h}({', '.join(_print(t) for t in args)})"
    return f"{_FUNCTION_NAMES.get(h, h)}({', '.join(_print(t) for t in a)})"


@lru_cache(maxsize=65536)
def render_expr(srepr_text: str) -> str:
    """`Add(Symbol('s77', ...), Integer(2))` -> `s77 + 2`; unparseable text is
    returned unchanged (shown, never evaluated)."""
    try:
        return _print(_norm(parse_srepr(srepr_text)))
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
