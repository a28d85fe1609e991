"""agent.yaml: load (${VAR}), validate (HoloDeck's rules), round-trip write-back."""

from workbench.config.loader import AgentConfig, load_agent
from workbench.config.models import Agent, LLMProvider, MCPTool, TestCase, Tool

__all__ = ["Agent", "AgentConfig", "LLMProvider", "MCPTool", "TestCase", "Tool", "load_agent"]
