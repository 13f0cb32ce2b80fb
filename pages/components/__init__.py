"""Browser widgets: HTML/CSS/JS kept beside the Python that mounts them (see ARCHITECTURE)."""
