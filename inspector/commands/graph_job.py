"""What `check` and `profile` share on the CLI side: start the job child after
validating the spec and planning the inputs here (an `error:` line in milliseconds,
without torch), and print failures the same way. Not a sub-command itself."""

from __future__ import annotations

import argparse
import sys
from typing import Any


def run_graph_job(job: str, args: argparse.Namespace, profile: bool) -> dict[str, Any]:
    """Validate and plan here (one `error:` line, no torch), then run the child."""
    from inspector.commands.export import ProgressBar
    from inspector.jobs.graph_spec import GraphRunSpec
    from inspector.jobs.runner import run_job

    from inspector.core.vetting import refuse_over_limits

    spec = GraphRunSpec.from_args(args)
    refuse_over_limits(spec.file, spec.programs)  # before parsing: bombs, the node limit
    spec.plan()
    bar = ProgressBar(delay_s=1.0)  # progress for the runs that take more than a second

    def on_event(event: dict[str, Any]) -> None:
        if event["event"] == "progress":
            bar.update(event["stage"], event["fraction"])
        elif event["event"] == "log" and event.get("level") != "info":
            sys.stderr.write(f"{event['level']}: {event['message']}\n")

    try:
        result = run_job(job, spec.to_argv(profile=profile), on_event=on_event)
    finally:
        bar.close()
    result.pop("event", None)
    return result


def shown_frames(frames: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    """The frames worth a line each: the innermost one outside torch (the model
    library's line, not nn.Module plumbing), then the innermost user frame when that
    is another one."""
    lib = next((f for f in reversed(frames)
                if "/torch/" not in str(f.get("file", "")).replace("\\", "/")), None)
    user = next((f for f in reversed(frames) if f.get("user")), None)
    out = [("made at", lib or frames[-1])] if frames else []
    if user is not None and user is not (lib or frames[-1]):
        out.append(("called from", user))
    return out


def inputs_text(inputs: list[dict[str, Any]]) -> str:
    parts = []
    for i in inputs:
        if i.get("shape") is None:
            parts.append(f"{i['name']}={i.get('value')!r}")
        else:
            parts.append(f"{i['name']} {i['dtype']}[{', '.join(map(str, i['shape']))}]")
    return ", ".join(parts) or "none"


def format_failure(f: dict[str, Any]) -> list[str]:
    line = f"line {f['line']}" if f.get("line") else "line ?"
    out = [f"  {line}: {f['node']} = {f['target']}",
           f"      {(f['message'].strip().splitlines() or [''])[0][:300]}"]
    for what, frame in shown_frames(f.get("frames") or []):
        out.append(f"      {what} {frame['file']}:{frame['line']} in {frame['function']}: "
                   f"{frame['code']}")
    return out
