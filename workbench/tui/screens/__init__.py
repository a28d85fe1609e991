"""The dashboard's screens and modals, one per file."""
