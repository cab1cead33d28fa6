"""Reusable widgets (listing view, search bar, panes, trees, tables, charts, theme).
They know nothing of the window or the panels."""
