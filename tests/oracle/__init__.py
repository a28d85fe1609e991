"""Test support for the search tests: HoloDeck's own filter as the oracle, catalogs, embedders."""
