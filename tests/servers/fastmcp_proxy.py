"""FastMCP's proxy of an MCPConfig with its tool search transform, served over stdio.

    python fastmcp_proxy.py CONFIG.json [--variant bm25|regex] [--max-results N]
                            [--always-visible NAME]... [--tag TEXT]

``CONFIG.json`` is ``{"mcpServers": {name: {"command": ..., "args": [...]}}}``; the proxy is
``create_proxy(config)`` plus ``add_transform(BM25SearchTransform(...))`` (or
``RegexSearchTransform``), as a FastMCP user builds it. ``--tag`` is ignored (tests find the
process by it).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from fastmcp.server import create_proxy
from fastmcp.server.transforms.search import BM25SearchTransform, RegexSearchTransform


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("config")
    parser.add_argument("--variant", choices=["bm25", "regex"], default="bm25")
    parser.add_argument("--max-results", type=int, default=5)
    parser.add_argument("--always-visible", action="append", default=[])
    parser.add_argument("--tag", default="")
    args = parser.parse_args()
    proxy = create_proxy(json.loads(Path(args.config).read_text()), name="holo-tune-test-proxy")
    kind = BM25SearchTransform if args.variant == "bm25" else RegexSearchTransform
    proxy.add_transform(kind(max_results=args.max_results, always_visible=args.always_visible))
    proxy.run(transport="stdio", show_banner=False)


if __name__ == "__main__":
    main()
