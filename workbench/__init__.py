"""holo-tune: a workbench for tuning the tool filtering of HoloDeck-style agents."""

__version__ = "0.1.0"
