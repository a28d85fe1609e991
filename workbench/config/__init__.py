"""agent.yaml: load (${VAR}), validate (HoloDeck's rules), round-trip write-back."""

from workbench.config.loader import AgentConfig, load_agent

__all__ = ["AgentConfig", "load_agent"]
