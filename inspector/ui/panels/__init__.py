"""Dockable panels (audit, export, run, ...). Each takes a Workspace (and widgets),
never the window; see inspector/ui/panels/registry.py for how a panel is added."""
