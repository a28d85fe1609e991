"""The command palette (ctrl+p): every dashboard action by name."""

from __future__ import annotations

from functools import partial

from textual.command import DiscoveryHit, Hit, Hits, Provider

#: (title, help, action run on the dashboard screen)
ACTIONS: tuple[tuple[str, str, str], ...] = (
    ("Write back", "Write the tool_filtering block into the YAML (diff first)", "write_back"),
    ("Export block", "Show the tool_filtering block and copy it", "export"),
    ("Cycle search method", "semantic → bm25 → hybrid", "cycle_method"),
    ("Method: semantic", "search_method = semantic", "set_method('semantic')"),
    ("Method: bm25", "search_method = bm25", "set_method('bm25')"),
    ("Method: hybrid", "search_method = hybrid", "set_method('hybrid')"),
    ("top_k +1", "Send one tool more", "top_k(1)"),
    ("top_k -1", "Send one tool fewer", "top_k(-1)"),
    ("Threshold +0.01", "Raise similarity_threshold", "threshold(0.01)"),
    ("Threshold -0.01", "Lower similarity_threshold", "threshold(-0.01)"),
    ("Threshold +0.1", "Raise similarity_threshold a lot", "threshold(0.1)"),
    ("Threshold -0.1", "Lower similarity_threshold a lot", "threshold(-0.1)"),
    ("top_n_used +1", "One more most-used tool always sent", "top_n(1)"),
    ("top_n_used -1", "One fewer most-used tool always sent", "top_n(-1)"),
    ("Toggle enabled", "Filtering on or off", "toggle_enabled"),
    ("Toggle always_include", "For the highlighted tool", "toggle_always"),
    (
        "Label: expected tool",
        "Mark the highlighted tool as expected for the query (again: unmark); saved at once",
        "label",
    ),
    ("Revert knobs", "Back to the values the file holds", "revert"),
    ("Compare methods", "semantic, bm25 and hybrid side by side", "show_tab('tab-compare')"),
    ("Ranking", "The ranking of the current query", "show_tab('tab-ranking')"),
    ("History", "Recent queries", "show_tab('tab-history')"),
    ("Catalog", "Every tool with its token cost", "show_tab('tab-catalog')"),
    ("Findings", "What the runtime will do differently", "show_tab('tab-findings')"),
    ("Evaluate", "Measure the setting on labelled queries", "evaluate"),
    (
        "Compare engines",
        "Every tool-search engine on labelled queries: table and recall/tokens plot",
        "compare_engines",
    ),
    (
        "Which runtime?",
        "Every runtime (HoloDeck 0.6, 0.7, Anthropic, Claude Code, OpenAI) at its tuned setting "
        "on labelled queries, with error bars",
        "which_runtime",
    ),
    ("Server log…", "A server's log (the highlighted one first)", "pick_server('log')"),
    (
        "Reconnect server…",
        "List a server's tools again (the highlighted one first)",
        "pick_server('reconnect')",
    ),
    ("Focus query", "Back to the query input", "focus_query"),
    ("Toggle servers panel", "Show or hide servers and catalog", "toggle_sidebar"),
    ("Help", "Keys and what they do", "show_help"),
)


class DashboardCommands(Provider):
    """Every action of the dashboard screen, searchable."""

    async def discover(self) -> Hits:
        for title, help_text, action in ACTIONS:
            yield DiscoveryHit(title, partial(self._run, action), help=help_text)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for title, help_text, action in ACTIONS:
            score = matcher.match(title)
            if score > 0:
                yield Hit(
                    score, matcher.highlight(title), partial(self._run, action), help=help_text
                )

    async def _run(self, action: str) -> None:
        await self.screen.run_action(action)
