"""One self-contained HTML page about an archive, to attach to a bug report.

Sections per program: audit findings (each linked to its listing line), shapes,
weights summary, profile (when given), the graph picture's first view (the Graph
panel's and `graph`'s layout, inline SVG), the highlighted listing (pygments; each
source comment folded into a <details>); then the archive's records with their
risk flags. Everything from the file is HTML-escaped; CSS and the one small
script are inline, and a Content-Security-Policy forbids every network load and
every script but the page's own (allowed by its sha256), so the page shows the
same offline and neither runs nor phones home even if a string slipped through. Element ids come from program indices, never from names in the file.
"""

from __future__ import annotations

import base64
import hashlib
import html
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from inspector import __version__
from inspector.core.archive import Archive
from inspector.core.atomic import check_output_path, write_bytes
from inspector.core.audit import SEVERITIES, Finding, audit_archive
from inspector.core.errors import InspectorError
from inspector.core.listing import COMMENT, Listing, render_listing
from inspector.core.program import Program
from inspector.core.shapes import ProgramShapes, archive_shapes, program_shapes
from inspector.core.summary import format_size, program_summary

# Nodes of a profile shown per program (the slowest first); the rest are summed.
PROFILE_TOP_NODES = 40
# Listings longer than this are shown unhighlighted: pygments takes ~1.2 s per
# 10,000 lines (ListingLexer; PythonLexer ~6x that), and a 140,000-line
# listing's page is 41 MB highlighted, 18 MB plain.
MAX_HIGHLIGHTED_LINES = 50_000
# The graph picture is drawn when its first view has at most this many boxes: dot
# takes ~1 s for 1,000 boxes and did not finish 10,000 (ARCHITECTURE.md's layout table).
MAX_GRAPH_BOXES = 1_500
# ... for this many programs (each level is a `dot` child: an archive of hundreds
# of programs would take minutes); the others name the command that draws them.
MAX_GRAPH_PROGRAMS = 16


class ReportError(InspectorError):
    """The report cannot be written (bad output path, unreadable profile)."""


def esc(value: Any) -> str:
    return html.escape("" if value is None else str(value), quote=True)


# --- assembling ---------------------------------------------------------------------

def build_report(archive: Archive, programs: Sequence[str], *,
                 weights: dict[str, list[dict[str, Any]]] | None = None,
                 profile: dict[str, Any] | None = None,
                 shapes_section: Callable[[Program, int], str] | None = None) -> str:
    """The page as one string. `weights`: program -> rows of `weights --json`;
    `profile`: the document `pt2-inspector profile --json` prints."""
    listings = {name: render_listing(archive.program(name)) for name in programs}
    if shapes_section is None:
        # core/shapes.py's account, as `pt2-inspector shapes` prints it (the export
        # record's requested dims, cross-program checks), assertions linked to lines
        shapes = {s.name: s for s in archive_shapes(archive)}

        def shapes_section(program: Program, index: int) -> str:
            return program_shapes_section(program, index, listings[program.name],
                                          shapes.get(program.name))
    findings = audit_archive(archive, listings=listings, programs=list(programs))
    profiles = {p.get("name"): p for p in (profile or {}).get("programs", []) if isinstance(p, dict)}
    body: list[str] = []
    nav = [f'<a href="#p{i}">{esc(name)}</a>' for i, name in enumerate(programs)]
    nav.append('<a href="#records">records</a>')
    body.append(f"<header><h1>{esc(archive.path.name)}</h1>"
                f"<p class=meta>{esc(format_size(archive.path.stat().st_size))}, "
                f"{esc(archive.layout)} archive, programs: {esc(', '.join(programs))}; "
                f"report by pt2-inspector {esc(__version__)}</p>"
                f"<nav>{' · '.join(nav)}</nav></header>")
    body.append(_section("summary", "Summary", summary_section(archive, programs, findings)))
    archive_findings = [f for f in findings if f.program is None]
    if archive_findings:
        body.append(_section("archive-findings", "Archive findings",
                             _findings_table(archive_findings, None)))
    for i, name in enumerate(programs):
        program = archive.program(name)
        listing = listings[name]
        own = [f for f in findings if f.program == name]
        summary = program_summary(program)
        parts = [f"<p class=meta>{summary['nodes']} nodes, schema {esc(summary['schema_version'])}, "
                 f"exported with torch {esc(summary['torch_version'])}</p>"]
        parts.append(_sub(f"p{i}-findings", f"Audit findings ({len(own)})",
                          _findings_table(own, i) if own else "<p>Nothing found.</p>"))
        parts.append(_sub(f"p{i}-shapes", "Shapes", shapes_section(program, i)))
        if weights is not None:
            parts.append(_sub(f"p{i}-weights", "Weights", weights_section(weights.get(name, []))))
        if name in profiles:
            parts.append(_sub(f"p{i}-profile", "Profile",
                              profile_section(profiles[name], (profile or {}).get("device"),
                                              program, listing, i)))
        if i < MAX_GRAPH_PROGRAMS:
            graph = graph_section(program, listing)
        else:
            graph = (f"<p>Not drawn: the report draws the graphs of its first "
                     f"{MAX_GRAPH_PROGRAMS} programs; <code>pt2-inspector graph FILE --program "
                     f"{esc(name)} --svg OUT.svg</code> draws this one.</p>")
        parts.append(_sub(f"p{i}-graph", "Graph", graph))
        parts.append(_sub(f"p{i}-listing", f"Listing ({len(listing)} lines)",
                          listing_html(listing, i, {f.line for f in own if f.line is not None})))
        body.append(_section(f"p{i}", f"Program {esc(name)}", "".join(parts)))
    body.append(_section("records", f"Records ({len(archive.records)})", records_section(archive)))
    return _page(f"pt2-inspector report: {archive.path.name}", "\n".join(body))


def _section(anchor: str, title: str, inner: str) -> str:
    return f'<section id="{anchor}"><h2>{title}</h2>{inner}</section>'


def _sub(anchor: str, title: str, inner: str) -> str:
    return f'<div class=sub id="{anchor}"><h3>{title}</h3>{inner}</div>'


# --- sections -------------------------------------------------------------------------

def summary_section(archive: Archive, programs: Sequence[str],
                    findings: Sequence[Finding]) -> str:
    """What the page says, before its tables: programs and nodes, risky records,
    findings counted by rule, and what to do (each distinct fix once, errors first)."""
    nodes = {name: archive.program(name).node_count for name in programs}
    risky = sum(1 for r in archive.records if r.risk)
    by_rule: dict[str, Counter[str]] = {}
    for f in findings:
        by_rule.setdefault(f.rule, Counter())[f.severity] += 1
    items = [f"<li>{len(programs)} program{'s' if len(programs) != 1 else ''}: "
             + ", ".join(f"{esc(n)} ({c:,} nodes)" for n, c in nodes.items())
             + f"; {sum(nodes.values()):,} nodes in all</li>",
             f"<li><b class={'bad' if risky else 'ok'}>{risky} risky record"
             f"{'s' if risky != 1 else ''}</b> (torch.export.load would execute code from "
             f"{'them' if risky != 1 else 'it'})</li>"]
    if by_rule:
        rules = "; ".join(
            f"{esc(rule)}: " + ", ".join(f"{n} {esc(sev)}" for sev, n in sorted(
                c.items(), key=lambda kv: SEVERITIES.index(kv[0])
                if kv[0] in SEVERITIES else 99))
            for rule, c in by_rule.items())
        items.append(f"<li>{len(findings)} audit finding{'s' if len(findings) != 1 else ''} "
                     f"by rule: {rules}</li>")
    else:
        items.append("<li>no audit findings</li>")
    order = {sev: i for i, sev in enumerate(SEVERITIES)}
    fixes = list(dict.fromkeys(
        f.fix for f in sorted(findings, key=lambda f: order.get(f.severity, 99)) if f.fix))
    todo = "".join(f"<li>{esc(fix)}</li>" for fix in fixes[:8])
    return (f"<ul>{''.join(items)}</ul>"
            + (f"<p><b>What to do</b></p><ol>{todo}</ol>" if todo else ""))


def _finding_groups(findings: Sequence[Finding]) -> list[list[Finding]]:
    """Findings of one rule, severity, group and fix together, in first-seen order:
    14 near-identical device literals are one row with their lines and one fix."""
    groups: dict[tuple[Any, ...], list[Finding]] = {}
    for f in findings:
        groups.setdefault((f.severity, f.rule, f.group, f.fix), []).append(f)
    return list(groups.values())


def _line_link(f: Finding, program_index: int | None) -> str:
    if f.line is None or program_index is None:
        return ""
    return f'<a href="#p{program_index}-L{f.line + 1}">{f.line + 1}</a>'


def _findings_table(findings: Sequence[Finding], program_index: int | None) -> str:
    rows = []
    for grp in _finding_groups(findings):
        if len(grp) == 1:
            rows.append(_finding_row(grp[0], program_index))
            continue
        f = grp[0]
        lines = [link for link in (_line_link(x, program_index) for x in grp) if link]
        shown = ", ".join(lines[:12]) + (", …" if len(lines) > 12 else "")
        label = f"{len(grp)} {esc(f.group or '')} {esc(f.rule)} findings".replace("  ", " ")
        each = "".join(f"<li>{_line_link(x, program_index) or '-'} <code>{esc(x.node)}</code>: "
                       f"{esc(x.message)}</li>" for x in grp)
        rows.append(f"<tr class=\"sev-{esc(f.severity)}\"><td>{esc(f.severity)}</td>"
                    f"<td>{esc(f.rule)}</td><td>{len(grp)}</td><td colspan=2><b>{label}</b>"
                    + (f": lines {shown}" if shown else "")
                    + f"<details><summary>each of them</summary><ul>{each}</ul></details>"
                    f"</td><td>{esc(f.fix)}</td></tr>")
    return ("<table><thead><tr><th>severity</th><th>rule</th><th>line</th><th>node</th>"
            "<th>finding</th><th>fix</th></tr></thead><tbody>" + "".join(rows) + "</tbody></table>")


def _finding_row(f: Finding, program_index: int | None) -> str:
    if f.line is not None and program_index is not None:
        where = f'<a href="#p{program_index}-L{f.line + 1}">line&nbsp;{f.line + 1}</a>'
    else:
        where = ""
    return (f"<tr class=\"sev-{esc(f.severity)}\"><td>{esc(f.severity)}</td><td>{esc(f.rule)}</td>"
            f"<td>{where}</td><td><code>{esc(f.node)}</code></td><td>{esc(f.message)}"
            + (f"<div class=src>at {esc(f.source)}</div>" if f.source else "")
            + "</td><td>" + esc(f.fix) + "</td></tr>")


def _table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """Cells are HTML already (escaped by the caller)."""
    head = "".join(f"<th>{h}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _code(v: Any) -> str:
    return f"<code>{esc(v)}</code>" if v not in (None, "") else "-"


def program_shapes_section(program: Program, program_index: int,
                           listing: Listing | None = None,
                           shapes: ProgramShapes | None = None) -> str:
    """What `pt2-inspector shapes` says (core/shapes.py): inputs, symbols with
    their ranges and the input dims they stand for, derived sizes, runtime
    assertions (linked to their listing lines when known), guards, and the dims
    that look specialized. Every string from the file is escaped."""
    ps = shapes if shapes is not None else program_shapes(program)
    listing = listing if listing is not None else render_listing(program)
    nodes = {(n.graph.name, n.index): n for n in program.all_nodes()}
    out = [_table(["input", "kind", "dtype", "shape / value"], [
        [_code(i.name), esc(i.kind), _code(i.dtype),
         _code("[" + ", ".join(i.shape) + "]" if i.shape is not None else i.value)]
        for i in ps.inputs])]
    if ps.symbols:
        out.append(_table(["symbol", "range", "stands for", "example", "defined by"], [
            [_code(s.name), esc(s.range_text()), esc(", ".join(s.sources)) or "-",
             esc(s.example) or "-", _code(s.defined_by)] for s in ps.symbols.values()]))
    else:
        out.append("<p>No dynamic dimensions: every size is fixed.</p>")
    if ps.derived:
        out.append(_table(["derived size", "equals", "first at"], [
            [_code(d.expr), esc(", ".join(d.sources)) or "-", _code(d.first_node)]
            for d in ps.derived]))
    if ps.assertions:
        rows = []
        for a in ps.assertions:
            node = nodes.get((a.graph, a.index))
            line = listing.line_of(node) if node is not None else None
            where = (f'<a href="#p{program_index}-L{line + 1}">line&nbsp;{line + 1}</a>'
                     if line is not None else "")
            src = f"{a.source.file}:{a.source.line}" if a.source else ""
            rows.append([_code(a.condition), _code(a.node), where, esc(src)])
        out.append(_table(["runtime assertion", "node", "line", "source"], rows))
    if ps.guards:
        out.append(_table(["guard"], [[_code(g.text)] for g in ps.guards]))
    if ps.specialized:
        out.append(_table(["looks specialized", "size", "why"], [
            [_code(s.source), _code(s.size), esc(s.reason)] for s in ps.specialized]))
    return "".join(out)


def signature_shapes_section(program: Program, program_index: int) -> str:
    """Inputs with their types and the range constraints, from the program model
    alone (the simpler account program_shapes_section replaced; kept for callers
    that want only the signature)."""
    summary = program_summary(program)
    rows = "".join(f"<tr><td><code>{esc(i['name'])}</code></td><td><code>{esc(i['type'] or '-')}</code>"
                   "</td></tr>" for i in summary["inputs"])
    outs = "".join(f"<tr><td><code>{esc(o['name'])}</code></td><td><code>{esc(o['type'] or '-')}</code>"
                   "</td></tr>" for o in summary["outputs"])
    ranges = "".join(
        f"<tr><td><code>{esc(sym)}</code></td><td>{esc(r['min'])}</td>"
        f"<td>{'inf' if r['max'] is None else esc(r['max'])}</td></tr>"
        for sym, r in summary["range_constraints"].items())
    out = ("<table><thead><tr><th>input</th><th>type</th></tr></thead><tbody>" + rows
           + "</tbody></table><table><thead><tr><th>output</th><th>type</th></tr></thead><tbody>"
           + outs + "</tbody></table>")
    if ranges:
        out += ("<table><thead><tr><th>symbol</th><th>min</th><th>max</th></tr></thead><tbody>"
                + ranges + "</tbody></table>")
    else:
        out += "<p>No dynamic dimensions: every size is fixed.</p>"
    return out


def _num(v: Any) -> str:
    if v is None:
        return "-"
    if isinstance(v, list):
        return f"{v[0]:.4g}{v[1]:+.4g}j"
    if isinstance(v, (bool, int)):
        return str(v)
    return f"{v:.4g}"


def weights_section(rows: list[dict[str, Any]]) -> str:
    if not rows:
        return "<p>No weights.</p>"
    total = sum(r["bytes"] or 0 for r in rows)
    by_dtype: dict[str, list[int]] = {}
    for r in rows:
        entry = by_dtype.setdefault(r["dtype"] or "-", [0, 0])
        entry[0] += 1
        entry[1] += r["bytes"] or 0
    flagged = [r for r in rows if r["stats"] and (r["stats"]["nan"] or r["stats"]["inf"])]
    unread = [r for r in rows if r["stats"] is None]
    head = (f"<p>{len(rows)} weights, {esc(format_size(total))}: "
            + ", ".join(f"{esc(d)} {n} ({esc(format_size(b))})" for d, (n, b) in sorted(by_dtype.items()))
            + f". <b class={'bad' if flagged else 'ok'}>{len(flagged)} with NaN/Inf</b>"
            + (f", {len(unread)} not read" if unread else "") + ".</p>")
    body = []
    for r in rows:
        s = r["stats"] or {}
        cls = " class=flag" if r in flagged else (" class=unread" if r["stats"] is None else "")
        shape = "[" + ", ".join(str(d) for d in r["shape"]) + "]"
        body.append(f"<tr{cls}><td><code>{esc(r['name'])}</code></td><td>{esc(r['kind'])}</td>"
                    f"<td>{esc(r['dtype'] or '-')}</td><td>{esc(shape)}</td>"
                    + "".join(f"<td class=n>{esc(_num(s.get(k)))}</td>"
                              for k in ("min", "max", "mean", "std", "nan", "inf", "zeros"))
                    + f"<td>{esc(r['note'] or '')}</td></tr>")
    return (head + "<table class=weights><thead><tr><th>name</th><th>kind</th><th>dtype</th>"
            "<th>shape</th><th>min</th><th>max</th><th>mean</th><th>std</th><th>NaN</th><th>Inf</th>"
            "<th>zeros</th><th>note</th></tr></thead><tbody>" + "".join(body) + "</tbody></table>")


def profile_section(prog: dict[str, Any], device: Any, program: Program, listing: Listing,
                    program_index: int) -> str:
    """Time per node (slowest first, linked to their lines) and per module."""
    lines_by_node = {}
    for node in program.graph.nodes:
        line = listing.line_of(node)
        if line is not None:
            lines_by_node[node.name] = line
    nodes = [n for n in prog.get("nodes", []) if isinstance(n, dict)]
    nodes.sort(key=lambda n: -_float(n.get("ms")))
    forward = _float(prog.get("forward_ms"))
    out = [f"<p>on {esc(device or '?')}: forward {esc(_num(forward))} ms, {len(nodes)} nodes timed</p>"]
    rows = []
    for n in nodes[:PROFILE_TOP_NODES]:
        line = lines_by_node.get(str(n.get("name")))
        if line is None and isinstance(n.get("line"), int) and n["line"] > 0:
            line = n["line"] - 1  # the profile's lines are 1-based, as `list` prints them
        link = f'<a href="#p{program_index}-L{line + 1}">line {line + 1}</a>' if line is not None else ""
        rows.append(f"<tr><td><code>{esc(n.get('name'))}</code></td><td><code>{esc(n.get('target'))}"
                    f"</code></td><td class=n>{esc(_num(_float(n.get('ms'))))}</td>"
                    f"<td class=n>{esc(_share(n.get('share')))}</td><td>{link}</td>"
                    f"<td>{esc(n.get('module'))}</td></tr>")
    rest = nodes[PROFILE_TOP_NODES:]
    if rest:
        rows.append(f"<tr><td colspan=2>{len(rest)} more nodes</td><td class=n>"
                    f"{esc(_num(sum(_float(n.get('ms')) for n in rest)))}</td><td colspan=3></td></tr>")
    out.append("<table><thead><tr><th>node</th><th>op</th><th>ms</th><th>share</th><th>line</th>"
               "<th>module</th></tr></thead><tbody>" + "".join(rows) + "</tbody></table>")
    modules = [m for m in prog.get("modules", []) if isinstance(m, dict)]
    if modules:
        modules.sort(key=lambda m: -_float(m.get("ms")))
        out.append("<table><thead><tr><th>module</th><th>ms</th><th>share</th></tr></thead><tbody>"
                   + "".join(f"<tr><td><code>{esc(m.get('name', m.get('module')))}</code></td>"
                             f"<td class=n>{esc(_num(_float(m.get('ms'))))}</td>"
                             f"<td class=n>{esc(_share(m.get('share')))}</td></tr>"
                             for m in modules[:PROFILE_TOP_NODES])
                   + "</tbody></table>")
    return "".join(out)


def graph_section(program: Program, listing: Listing) -> str:
    """The program's top graph as the Graph panel first shows it (the chain of sole
    child modules open, every other module one box), as inline SVG; a line saying why
    when it cannot be drawn. The SVG's texts are escaped by graph_svg."""
    from inspector.core.graph_layout import LayoutError
    from inspector.core.graph_model import GraphModel
    from inspector.core.graph_picture import GraphPicture
    from inspector.core.graph_svg import picture_svg

    model = GraphModel(program, "", listing.printed_name)
    painter = GraphPicture(model)
    opened = painter.sole_children()
    boxes = sum(len(model.level(scope).boxes) for scope in ("", *opened))
    hint = f"<code>pt2-inspector graph FILE --program {esc(program.name)} --module PATH</code>"
    if boxes > MAX_GRAPH_BOXES:
        return (f"<p>Not drawn: the top graph has {boxes:,} boxes (the report draws up to "
                f"{MAX_GRAPH_BOXES:,}); {hint} draws one module.</p>")
    try:
        pic = painter.picture("", opened)
    except LayoutError as exc:
        return f"<p>Not drawn: {esc(exc)}.</p>"
    where = f" ({esc(', '.join(sorted(opened)))} open)" if opened else ""
    return (f"<p class=meta>{len(pic.boxes)} boxes, {len(pic.edges)} edges{where}; each module "
            f"is one box: {hint} or the window's Graph panel opens them.</p>"
            f"<div class=graph>{picture_svg(pic, program.name)}</div>")


def _float(v: Any) -> float:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else 0.0


def _share(v: Any) -> str:
    return f"{_float(v) * 100:.1f}%" if isinstance(v, (int, float)) else "-"


def records_section(archive: Archive) -> str:
    rows = []
    for r in archive.records:
        flag = "<b class=bad>risk</b>" if r.risk else ""
        rows.append(f"<tr{' class=flag' if r.risk else ''}><td><code>{esc(r.path)}</code></td>"
                    f"<td>{esc(r.kind)}</td><td class=n>{esc(format_size(r.size))}</td>"
                    f"<td>{flag}</td><td>{esc(r.why)}</td></tr>")
    risky = sum(1 for r in archive.records if r.risk)
    head = (f"<p>{len(archive.records)} records, {esc(format_size(archive.total_size))}; "
            f"<b class={'bad' if risky else 'ok'}>{risky} risky</b> "
            "(torch.export.load would execute code from them).</p>")
    return (head + "<table><thead><tr><th>record</th><th>kind</th><th>size</th><th>risk</th>"
            "<th>why</th></tr></thead><tbody>" + "".join(rows) + "</tbody></table>")


def listing_html(listing: Listing, program_index: int, marked: set[int]) -> str:
    """The listing, highlighted by pygments line by line, each line an anchor
    (`p{i}-L{n}`, n as `pt2-inspector list` numbers lines); source comments fold."""
    from pygments import highlight
    from pygments.formatters import HtmlFormatter

    from inspector.core.listing_lexer import ListingLexer

    plain = [esc(line) for line in listing.lines]
    highlighted = plain
    if len(listing.lines) <= MAX_HIGHLIGHTED_LINES:
        # nowrap output keeps one source line per output line: HtmlFormatter closes
        # and reopens spans at every newline, so splitting on them keeps tags balanced.
        text = "\n".join(listing.lines)
        highlighted = highlight(text, ListingLexer(stripnl=False, ensurenl=False),
                                HtmlFormatter(nowrap=True)).removesuffix("\n").split("\n")
        if len(highlighted) != len(listing.lines):  # never expected; stay correct regardless
            highlighted = plain
    out = []
    if highlighted is plain and len(listing.lines) > MAX_HIGHLIGHTED_LINES:
        out.append(f"<p class=meta>Not highlighted: over {MAX_HIGHLIGHTED_LINES:,} lines.</p>")
    out.append('<pre class="listing hl">')
    for n, (line, code) in enumerate(zip(listing.lines, highlighted), start=1):
        anchor = f"p{program_index}-L{n}"
        cls = "ln mark" if (n - 1) in marked else "ln"
        num = f'<a class=no href="#{anchor}">{n}</a>'
        if listing.kinds[n - 1] == COMMENT:
            indent = len(line) - len(line.lstrip(" "))
            out.append(f'<span id="{anchor}" class="{cls}">{num}{" " * indent}<details class=src>'
                       f"<summary>{esc(_fold_label(line.strip()))}</summary>{code.lstrip(' ')}"
                       "</details></span>")
        else:
            out.append(f'<span id="{anchor}" class="{cls}">{num}{code}</span>')
    out.append("</pre>")
    return "".join(out)  # inside <pre> a newline between the block spans is a blank line


def _fold_label(comment: str) -> str:
    """`# File: .../modeling_gpt2.py:549 in forward, code: ...` -> `# modeling_gpt2.py:549 in forward`."""
    if comment.startswith("# File: "):
        where = comment[len("# File: "):].split(", code: ", 1)[0]
        path, _, rest = where.partition(" in ")
        return f"# {path.rsplit('/', 1)[-1]}" + (f" in {rest}" if rest else "")
    return comment if len(comment) <= 80 else comment[:77] + "..."


# --- the page ----------------------------------------------------------------------------


_CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:0;color:#1d2330;background:#fbfbfd}
header{padding:16px 24px;background:#1f2937;color:#f3f4f6}
header h1{margin:0 0 4px;font-size:20px}
header a{color:#93c5fd;margin-right:4px}
.meta{color:#6b7280;margin:4px 0}
.graph{overflow:auto;max-height:640px;border:1px solid #e5e7eb;background:#fff}
header .meta{color:#d1d5db}
section{padding:8px 24px 16px;border-bottom:1px solid #e5e7eb}
h2{font-size:18px;margin:16px 0 8px}
h3{font-size:15px;margin:14px 0 6px}
table{border-collapse:collapse;margin:6px 0 10px;font-size:13px}
th,td{border:1px solid #e5e7eb;padding:3px 8px;text-align:left;vertical-align:top}
th{background:#f3f4f6}
td.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
tr.flag td{background:#fef2f2}
tr.unread td{color:#6b7280}
tr.sev-error td:first-child{color:#b91c1c;font-weight:600}
tr.sev-warning td:first-child{color:#b45309;font-weight:600}
.bad{color:#b91c1c}.ok{color:#15803d}
.src{color:#6b7280;font-size:12px}
pre.listing{background:#fff;border:1px solid #e5e7eb;padding:8px 0;overflow-x:auto;font-size:12.5px;line-height:1.4}
pre.listing .ln{display:block;padding-right:12px;white-space:pre}
pre.listing .ln:target,pre.listing .ln.mark{background:#fff7d6}
pre.listing .ln:target{outline:2px solid #f59e0b}
pre.listing a.no{display:inline-block;width:5ch;margin-right:1.5ch;text-align:right;color:#9ca3af;text-decoration:none;user-select:none}
details.src{display:inline}
details.src summary{display:inline;cursor:pointer;color:#6b7280;font-style:italic;list-style:none}
details.src summary::-webkit-details-marker{display:none}
details.src summary::before{content:"\\25B8 "}
details.src[open] summary{display:none}
code{font-family:ui-monospace,"SFMono-Regular",Menlo,Consolas,monospace}
"""

# Opens the folded comment a link points into (browsers scroll to an anchor
# inside a closed <details> without opening it).
_SCRIPT = """
function openTarget(){var id=decodeURIComponent(location.hash.slice(1));if(!id)return;
var el=document.getElementById(id);if(!el)return;
for(var d=el.closest('details');d;d=d.parentElement&&d.parentElement.closest('details'))d.open=true;
var inner=el.querySelector('details');if(inner)inner.open=true;}
window.addEventListener('hashchange',openTarget);window.addEventListener('DOMContentLoaded',openTarget);
"""


def script_hash(script: str) -> str:
    """The CSP source that allows exactly this inline script (its text, UTF-8, sha256)."""
    return "'sha256-" + base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode() + "'"


# Only our own script runs (by hash: an injected <script> or on* attribute does
# not); no network load of any kind.
_CSP = ("default-src 'none'; style-src 'unsafe-inline'; "
        f"script-src {script_hash(_SCRIPT)}; "
        "img-src data:; base-uri 'none'; form-action 'none'")


def _page(title: str, body: str) -> str:
    from pygments.formatters import HtmlFormatter

    css = _CSS + HtmlFormatter(style="default").get_style_defs(".hl")
    return ("<!DOCTYPE html>\n<html lang=en><head><meta charset=utf-8>"
            f'<meta http-equiv="Content-Security-Policy" content="{_CSP}">'
            '<meta name=viewport content="width=device-width, initial-scale=1">'
            f"<title>{esc(title)}</title><style>{css}</style><script>{_SCRIPT}</script></head>"
            f"<body>\n{body}\n</body></html>\n")


# --- writing ------------------------------------------------------------------------------

def check_report_output(path: str | Path, inputs: list[str | Path | None]) -> Path:
    """The rule of every command that writes (core/atomic.py): never an input (the
    archive, the profile), never a folder, link, device or FIFO."""
    return check_output_path(path, inputs=inputs, error=ReportError)


def write_atomically(path: str | Path, text: str) -> None:
    """Write `text` through an unnamed file (core/atomic.py, as retarget does) and
    give it `path`'s name at the end: a failure, Ctrl+C or SIGKILL leaves no
    half-written report and no temporary file (and any old one intact)."""
    try:
        write_bytes(path, text.encode("utf-8"), error=ReportError)
    except OSError as exc:
        raise ReportError(f"cannot write {path} ({exc.strerror or exc})") from None
