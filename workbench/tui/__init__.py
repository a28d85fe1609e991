"""The Textual dashboard (``holo-tune AGENT.yaml``).

Only this package imports textual. Every number it shows comes from a call into the core
(``workbench.config``, ``workbench.catalog``, ``workbench.workspace``, ``workbench.search``,
``workbench.evaluate``): the widgets draw, they never score or read files themselves.
"""
