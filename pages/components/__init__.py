"""Browser widgets: HTML/CSS/JS kept beside the Python that mounts them (see docs/architecture.md)."""
