"""The dashboard's parts: its state, the panels' subscriptions, the server session, the lab's
workers, the key actions and the write-back flow (docs/architecture.md has the map)."""
