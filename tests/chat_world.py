"""The setting the chat-model tests share (``cases generate``, ``--llm``): small servers for a
catalog snapshot, and an agent with things that must never reach the model, pointed at a running
:class:`~fake_chat_server.FakeChatServer`."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from fake_chat_server import FakeChatServer

if TYPE_CHECKING:
    from pytest import MonkeyPatch

#: What must never be sent: the weather server's token, from the environment.
SECRET = "do-not-send-0xC0FFEE"
#: Two servers of two tools each, as ``write_catalog`` takes them.
WEATHER_AND_MAIL: dict[str, list[tuple[str, str, list[str]]]] = {
    "weather": [
        ("get_forecast", "Weather forecast for a city", ["city", "days"]),
        ("get_alerts", "Severe weather alerts for a region", ["region"]),
    ],
    "mail": [
        ("send_email", "Send an email message to a recipient", ["to", "subject", "body"]),
        ("list_inbox", "List the messages in the email inbox", []),
    ],
}


def private_agent(
    folder: Path, name: str, model: str, server: FakeChatServer, monkeypatch: MonkeyPatch
) -> Path:
    """``folder/agent.yaml``: the agent ``name`` on ``model`` (``provider:name``) whose
    instructions ("... stay private") and weather token (:data:`SECRET`) must not be sent; the
    environment holds the token and points the chat client at ``server`` (cache in
    ``folder/cache``)."""
    provider, model_name = model.split(":", 1)
    agent = folder / "agent.yaml"
    agent.write_text(
        f"name: {name}\nmodel:\n  provider: {provider}\n  name: {model_name}\n"
        "instructions:\n  inline: the agent's own instructions stay private\n"
        "tools:\n  - name: weather\n    type: mcp\n    description: weather\n"
        "    command: no-such-command\n"
        "    env:\n      WEATHER_TOKEN: ${WEATHER_TOKEN}\n"
    )
    monkeypatch.setenv("WEATHER_TOKEN", SECRET)
    for variable, value in server.environment(folder / "cache").items():
        monkeypatch.setenv(variable, value)
    return agent
