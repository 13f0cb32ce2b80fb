"""CLI command modules. Each defines ``register(app: typer.Typer)``; see medsim_annot.cli."""
