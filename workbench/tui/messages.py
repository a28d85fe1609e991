"""Messages the dashboard's workers and widgets post; the screen wires them together.

Thread workers only ever ``post_message`` (thread-safe); the handlers run on the UI thread.
"""

from __future__ import annotations

from dataclasses import dataclass

from textual.message import Message

from workbench.catalog import Catalog, ServerStatus
from workbench.search.types import Ranking


@dataclass
class ServerChanged(Message):
    """A server moved on (pending → connecting → ok/error). ``status`` is a copy."""

    status: ServerStatus


@dataclass
class CatalogGrew(Message):
    """More servers answered while others are still connecting: ``catalog`` is what the
    runtime would see of them so far (in its order); the final catalog comes as the worker's
    result."""

    catalog: Catalog


@dataclass
class RankingsReady(Message):
    """Scores for ``query`` arrived for one or more methods (a thread worker computed them)."""

    query: str
    rankings: dict[str, Ranking]


@dataclass
class SignalsScored(Message):
    """serve's engine scored ``query``'s signals (a thread worker did): the lab fuses them
    under the knobs."""

    query: str


@dataclass
class EmbedderLoading(Message):
    """Scoring ``query`` has to load the embedding ``model`` first (seconds): say so."""

    query: str
    model: str


@dataclass
class SettingEdited(Message):
    """A knob moved: ``field`` is a ``tool_filtering`` key, ``value`` its new value."""

    field: str
    value: object


@dataclass
class ToggleAlways(Message):
    """The user asked to add or remove ``tool`` (a full name) from ``always_include``."""

    tool: str


@dataclass
class ToggleLabel(Message):
    """The user marked ``tool`` (a full name) as expected for the query in the lab, or unmarked
    it."""

    tool: str


@dataclass
class RerunQuery(Message):
    """A query from the history should be run again."""

    query: str
