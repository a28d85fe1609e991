"""``holo-tune serve``: holo-tune's tuned search behind any MCP client, as a FastMCP server.

- :mod:`~workbench.serve.upstream`: one long-lived session per MCP entry (restarts, timeouts);
- :mod:`~workbench.serve.index`: ``search_tools``'s answer, ``holo-tune search``'s selection;
- :mod:`~workbench.serve.calls`: a call by full name to its server, or one clear error;
- :mod:`~workbench.serve.server`: the FastMCP server (the only module importing fastmcp);
- :mod:`~workbench.serve.logs`: stderr and ``serve.log``, scrubbed of secrets;
- :mod:`~workbench.serve.app`: starting, serving a transport, stopping on a signal.
"""
