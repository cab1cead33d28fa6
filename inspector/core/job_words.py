"""A job's messages in the window's words: its controls, not the CLI's flags.

The jobs' messages are shared with the CLI and may name its flags (`--batch`,
`only with --trust`); a panel shows them with the names of its controls instead.
"""

from __future__ import annotations

import re

_FLAG_WORDS = (
    (re.compile(r"\s*\(--trust on the command line\)"), ""),
    (re.compile(r"\bonly with --trust\b"), "only if you trust it"),
    (re.compile(r"--mode (\w+)"), r"Mode \1"),
    (re.compile(r"--max-tokens\b"), "Max tokens"),
    (re.compile(r"--batch\b"), "Batch"),
    (re.compile(r"--precision\b"), "Precision"),
    (re.compile(r"--device\b"), "Device"),
    (re.compile(r"--repeats\b"), "Repeats"),
    (re.compile(r"--warmup\b"), "Warm-up"),
    (re.compile(r"--compile\b"), "torch.compile"),
)


def window_terms(message: str) -> str:
    """A job message as the window says it: controls, not CLI flags."""
    for pattern, words in _FLAG_WORDS:
        message = pattern.sub(words, message)
    return message
