"""pt2-inspector: read, audit, retarget, re-export and time torch.export archives."""

__version__ = "0.1.0"
