"""Labelled cases, metrics, sweeps, the tuner and diagnostics."""
