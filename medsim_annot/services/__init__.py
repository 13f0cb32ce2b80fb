"""Use cases shared by the CLI and the Streamlit pages (one module per area)."""
