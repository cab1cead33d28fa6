"""The top layer: the main window shell, its menus and actions, navigation history,
the archive tab and the docking of panels. Nothing below imports from here."""
