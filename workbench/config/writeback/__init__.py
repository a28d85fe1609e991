"""Writers: every change holo-tune makes to a file, planned first, applied through one apply.

Each writer makes a plan (the new bytes, a unified diff, warnings) without touching the disk, so the
CLI's ``--dry-run`` and the dashboard's confirmation can show it; applying goes through
:func:`workbench.config.writeback.files.apply_bytes` (atomic, the file's mode kept, written through
a symlink to its target, a backup, refused when the file changed since it was read).

* :mod:`~workbench.config.writeback.block`: the agent's ``tool_filtering`` block (HoloDeck 0.6),
  spliced as text by :mod:`~workbench.config.writeback.splice` with
  :mod:`~workbench.config.writeback.render` and :mod:`~workbench.config.writeback.skeleton`.
* :mod:`~workbench.config.writeback.allowlist`: HoloDeck 0.7's per-entry allowlists.
* :mod:`~workbench.config.writeback.mcp_json`: Claude Code's ``.mcp.json``;
  :mod:`~workbench.config.writeback.json_file`: any JSON object file (PizzaPi's ``config.json``).
* :mod:`~workbench.runtimes.argus.config_file`: an Argus MCP ``config.yaml``.
* :mod:`~workbench.runtimes.fastmcp.proxy_file`: the runnable FastMCP proxy file.
* :mod:`~workbench.config.writeback.text`: diffs, newlines and edits shared by the text writers.
"""
