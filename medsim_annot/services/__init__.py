"""Use cases shared by the CLI and the pages (ARCHITECTURE.md)."""
