"""Tool search: HoloDeck's engines (semantic, bm25, hybrid), selection, embedders."""
