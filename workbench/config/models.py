"""The agent.yaml schema: HoloDeck 0.6's models, field for field, for the parts a tuner needs.

Strict (``extra="forbid"``, HoloDeck's bounds and validators) where the runtime would reject the
file and the answer matters here: the model, the embedding provider, every tool type, the
``tool_filtering`` block and the test cases. Sections a tuner never reads (evaluations, execution,
observability, deployment, claude, openai, ...) are carried as plain data. The lenient checks
(``name``, ``instructions``, the stdio command allow-list, ...) live in
:mod:`workbench.config.checks` and become warnings.

Model validators that blame one field raise :func:`field_error` so the error names that field's
line, not the whole entry's.
"""

from __future__ import annotations

import math
import re
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from workbench.config.filtering import ToolFiltering

#: The error type :func:`field_error` raises; ``ctx["field"]`` names the blamed key.
FIELD_ERROR = "holo_tune_field"

TOOL_NAME_PATTERN = r"^[0-9A-Za-z_]+$"
#: ``holodeck.models.tool.CommandType``: the only stdio commands HoloDeck 0.6 starts.
ALLOWED_COMMANDS = ("npx", "node", "uvx", "docker")
TRANSPORTS = ("stdio", "sse", "websocket", "http")
SOURCE_SCHEMES = ("az", "file", "http", "https", "s3")
MAX_TOOLS = 50
MAX_TEST_CASES = 1000


def field_error(message: str, *path: str | int) -> PydanticCustomError:
    """A validation error that belongs to ``path`` (keys below the model being validated)."""
    return PydanticCustomError(FIELD_ERROR, "{message}", {"path": path, "message": message})


def _non_empty(value: str | None, what: str) -> str | None:
    if value is not None and not value.strip():
        raise ValueError(f"{what} must not be empty")
    return value


def _check_source(value: str) -> str:
    if not value.strip():
        raise ValueError("source must be a non-empty path")
    if "://" in value:
        scheme = value.split("://", 1)[0].lower()
        if scheme not in SOURCE_SCHEMES:
            raise ValueError(
                f"unsupported URI scheme '{scheme}' (supported: {', '.join(SOURCE_SCHEMES)})"
            )
    return value


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


# --- model -----------------------------------------------------------------------------------

Provider = Literal["openai", "azure_openai", "ollama", "anthropic"]
AuthProvider = Literal["api_key", "oauth_token", "bedrock", "vertex", "foundry", "custom"]


class LLMProvider(_Strict):
    """``model:`` and ``embedding_provider:`` (``holodeck.models.llm.LLMProvider``)."""

    provider: Provider
    name: str
    temperature: float | None = Field(default=0.3, ge=0.0, le=2.0)
    max_tokens: int | None = Field(default=1000, gt=0)
    top_p: float | None = Field(default=None, ge=0.0, le=1.0)
    endpoint: str | None = None
    api_key: SecretStr | None = None
    api_version: str | None = None
    auth_provider: AuthProvider | None = None

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        return _non_empty(value, "name") or value

    @model_validator(mode="after")
    def _endpoint(self) -> LLMProvider:
        if self.provider == "azure_openai" and not (self.endpoint or "").strip():
            raise field_error("endpoint is required for the azure_openai provider", "endpoint")
        return self


# --- tools -----------------------------------------------------------------------------------


class _ToolBase(_Strict):
    name: str = Field(pattern=TOOL_NAME_PATTERN)
    description: str
    defer_loading: bool = True


class DatabaseConfig(BaseModel):
    """A vector database; provider-specific keys are allowed, as in HoloDeck."""

    model_config = ConfigDict(extra="allow")

    provider: Literal[
        "postgres",
        "azure-ai-search",
        "qdrant",
        "weaviate",
        "chromadb",
        "faiss",
        "azure-cosmos-mongo",
        "azure-cosmos-nosql",
        "sql-server",
        "pinecone",
        "in-memory",
    ]
    connection_string: SecretStr | None = None

    @field_validator("connection_string")
    @classmethod
    def _connection(cls, value: SecretStr | None) -> SecretStr | None:
        if value is not None and not value.get_secret_value().strip():
            raise ValueError("connection_string must not be empty")
        return value


class VectorstoreTool(_ToolBase):
    """``type: vectorstore``: semantic search over documents (one function, ``search``)."""

    type: Literal["vectorstore"] = "vectorstore"
    source: str
    vector_field: str | list[str] | None = None
    meta_fields: list[str] | None = None
    chunk_size: int | None = Field(default=None, gt=0)
    chunk_overlap: int | None = Field(default=None, ge=0)
    embedding_model: str | None = None
    embedding_dimensions: int | None = Field(default=None, gt=0, le=10000)
    database: DatabaseConfig | str | None = None
    top_k: int = Field(default=5, gt=0, le=100)
    min_similarity_score: float | None = Field(default=None, ge=0.0, le=1.0)
    record_path: str | None = None
    record_prefix: str | None = None
    meta_prefix: str | None = None
    id_field: str | None = None
    field_separator: str = "\n"
    delimiter: str | None = None

    @field_validator("source")
    @classmethod
    def _source(cls, value: str) -> str:
        return _check_source(value)

    @field_validator("database")
    @classmethod
    def _database(cls, value: DatabaseConfig | str | None) -> DatabaseConfig | str | None:
        if isinstance(value, str):
            _non_empty(value, "database reference")
        return value

    @model_validator(mode="after")
    def _structured(self) -> VectorstoreTool:
        if self.vector_field is not None and self.id_field is None:
            raise field_error("id_field is required when vector_field is set", "id_field")
        return self


class FunctionTool(_ToolBase):
    """``type: function``: a Python function from a file."""

    type: Literal["function"] = "function"
    file: str
    function: str
    parameters: dict[str, dict[str, Any]] | None = None

    @field_validator("file", "function")
    @classmethod
    def _filled(cls, value: str, info: ValidationInfo) -> str:
        return _non_empty(value, str(info.field_name)) or value


class MCPTool(_ToolBase):
    """``type: mcp``: one MCP server (one plugin named after the entry)."""

    type: Literal["mcp"] = "mcp"
    transport: Literal["stdio", "sse", "websocket", "http"] = "stdio"
    # stdio: HoloDeck accepts only npx/node/uvx/docker; other commands are a warning here.
    command: str | None = None
    args: list[str] | None = None
    env: dict[str, str] | None = None
    env_file: str | None = None
    encoding: str | None = None
    # sse / websocket / http
    url: str | None = None
    headers: dict[str, str] | None = None
    timeout: float | None = None
    sse_read_timeout: float | None = None
    terminate_on_close: bool | None = None
    # common
    config: dict[str, Any] | None = None
    load_tools: bool = True
    load_prompts: bool = True
    request_timeout: int = Field(default=60, gt=0)
    is_retrieval: bool = False
    registry_name: str | None = None

    @field_validator("command")
    @classmethod
    def _command(cls, value: str | None) -> str | None:
        return _non_empty(value, "command")

    @field_validator("url")
    @classmethod
    def _url(cls, value: str | None) -> str | None:
        if value is None:
            return value
        if value.startswith("http://"):
            local = ("http://localhost", "http://127.0.0.1", "http://[::1]")
            if not value.startswith(local):
                raise ValueError("url must use https:// (http:// only for localhost)")
        elif not value.startswith(("https://", "wss://", "ws://")):
            raise ValueError("url must use https://, wss:// or ws://")
        return value

    @model_validator(mode="after")
    def _transport_fields(self) -> MCPTool:
        if self.transport == "stdio" and self.command is None:
            raise field_error("command is required for the stdio transport", "command")
        if self.transport != "stdio" and self.url is None:
            raise field_error(f"url is required for the {self.transport} transport", "url")
        return self


class PromptTool(_ToolBase):
    """``type: prompt``: a prompt-template function (HoloDeck does not register it)."""

    type: Literal["prompt"] = "prompt"
    template: str | None = None
    file: str | None = None
    parameters: dict[str, dict[str, Any]]
    model: dict[str, Any] | None = None

    @field_validator("template", "file")
    @classmethod
    def _filled(cls, value: str | None, info: ValidationInfo) -> str | None:
        return _non_empty(value, str(info.field_name))

    @field_validator("parameters")
    @classmethod
    def _parameters(cls, value: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
        if not value:
            raise ValueError("parameters must have at least one parameter")
        return value

    @model_validator(mode="after")
    def _one_source(self) -> PromptTool:
        if bool(self.template) == bool(self.file):
            raise field_error("give exactly one of template or file", "template")
        return self


class KeywordIndexConfig(BaseModel):
    """A hierarchical document tool's keyword (BM25) index."""

    model_config = ConfigDict(extra="allow")

    provider: Literal["in-memory", "opensearch"] = "in-memory"
    endpoint: str | None = None
    index_name: str | None = None
    username: str | None = None
    password: SecretStr | None = None
    api_key: SecretStr | None = None
    verify_certs: bool = True
    timeout_seconds: int = Field(default=10, ge=1, le=120)

    @model_validator(mode="after")
    def _opensearch(self) -> KeywordIndexConfig:
        if self.provider == "opensearch":
            for name in ("endpoint", "index_name"):
                if not getattr(self, name):
                    raise field_error(f"{name} is required for the opensearch provider", name)
        return self


class HierarchicalDocumentTool(_ToolBase):
    """``type: hierarchical_document``: structure-aware document search."""

    type: Literal["hierarchical_document"] = "hierarchical_document"
    source: str
    chunking_strategy: Literal["structure", "token"] = "structure"
    max_chunk_tokens: int = Field(default=800, ge=100, le=2000)
    chunk_overlap: int = Field(default=50, ge=0, le=200)
    document_domain: Literal[
        "none", "us_legislative", "au_legislative", "academic", "technical", "legal_contract"
    ] = "none"
    max_subsection_depth: int | None = Field(default=None, ge=1)
    search_mode: Literal["semantic", "keyword", "hybrid"] = "hybrid"
    top_k: int = Field(default=10, ge=1, le=100)
    min_score: float | None = Field(default=None, ge=0.0, le=1.0)
    semantic_weight: float = Field(default=0.5, ge=0.0, le=1.0)
    keyword_weight: float = Field(default=0.3, ge=0.0, le=1.0)
    exact_weight: float = Field(default=0.2, ge=0.0, le=1.0)
    rrf_k: int = Field(default=60, ge=1)
    contextual_embeddings: bool = True
    context_max_tokens: int = Field(default=100, ge=50, le=200)
    context_concurrency: int = Field(default=10, ge=1, le=50)
    extract_definitions: bool = True
    extract_cross_references: bool = True
    enable_reranking: bool = False
    reranker_model: LLMProvider | None = None
    context_model: LLMProvider | None = None
    embedding_model: str | None = None
    database: DatabaseConfig | str | None = None
    keyword_index: KeywordIndexConfig | None = None

    @field_validator("source")
    @classmethod
    def _source(cls, value: str) -> str:
        return _check_source(value)

    @model_validator(mode="after")
    def _weights(self) -> HierarchicalDocumentTool:
        weights = (self.semantic_weight, self.keyword_weight, self.exact_weight)
        if not all(math.isfinite(w) for w in weights):
            raise field_error("search weights must be finite numbers", "semantic_weight")
        if self.search_mode == "hybrid":
            total = sum(weights)
            if not math.isclose(total, 1.0, rel_tol=0.0, abs_tol=1e-6):
                raise field_error(
                    f"hybrid weights (semantic + keyword + exact) must sum to 1.0, got {total:g}",
                    "semantic_weight",
                )
            if self.semantic_weight + self.keyword_weight <= 0:
                raise field_error(
                    "hybrid search needs semantic_weight + keyword_weight > 0", "semantic_weight"
                )
        if self.enable_reranking and self.reranker_model is None:
            raise field_error("reranker_model is required with enable_reranking", "reranker_model")
        return self


Tool = VectorstoreTool | FunctionTool | MCPTool | PromptTool | HierarchicalDocumentTool
ToolUnion = Annotated[Tool, Field(discriminator="type")]
TOOL_TYPES: dict[str, type[_ToolBase]] = {
    "mcp": MCPTool,
    "vectorstore": VectorstoreTool,
    "function": FunctionTool,
    "hierarchical_document": HierarchicalDocumentTool,
    "prompt": PromptTool,
}


# --- test cases ------------------------------------------------------------------------------


class ExpectedTool(_Strict):
    """The object form of an expected tool: ``{name, args, count}``."""

    name: str
    args: dict[str, Any] | None = None
    count: int = Field(default=1, ge=1)

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        return _non_empty(value, "name") or value

    @model_validator(mode="after")
    def _matchers(self) -> ExpectedTool:
        for key, value in (self.args or {}).items():
            problem = _matcher_problem(value)
            if problem:
                raise field_error(problem, "args", key)
        return self


def _matcher_problem(value: Any) -> str | None:
    """HoloDeck's rule for an argument matcher: ``{fuzzy: str}`` or ``{regex: str}``, alone.

    Any other value (a scalar, a list, a mapping without those keys) is a literal to compare.
    """
    if not isinstance(value, dict):
        return None
    kinds = [k for k in ("fuzzy", "regex") if k in value]
    if not kinds:
        return None
    if len(kinds) == 2:
        return "a matcher takes one of fuzzy or regex, not both"
    if len(value) > 1:
        others = ", ".join(sorted(str(k) for k in value if k != kinds[0]))
        return f"a {kinds[0]} matcher takes no other keys (got {others})"
    pattern = value[kinds[0]]
    if not isinstance(pattern, str):
        return f"the {kinds[0]} pattern must be a string"
    if kinds[0] == "regex":
        try:
            re.compile(pattern)
        except re.error as err:
            return f"the regex does not compile: {err}"
    return None


def _expected_entries(value: Any) -> Any:
    """A bare name stays a string; anything else but a mapping is refused with one clear cause."""
    if isinstance(value, list):
        for entry in value:
            if not isinstance(entry, str | dict | ExpectedTool):
                raise ValueError("each expected tool must be a name or a {name, args, count}")
    return value


ExpectedTools = list[str | ExpectedTool] | None


class Turn(_Strict):
    """One exchange of a multi-turn test case."""

    input: str
    ground_truth: str | None = None
    expected_tools: ExpectedTools = None
    files: list[dict[str, Any]] | None = Field(default=None, max_length=10)
    retrieval_context: list[str] | None = None
    evaluations: list[Any] | None = None
    turn_config: dict[str, Any] | None = None

    @field_validator("expected_tools", mode="before")
    @classmethod
    def _expected(cls, value: Any) -> Any:
        return _expected_entries(value)

    @field_validator("input")
    @classmethod
    def _input(cls, value: str) -> str:
        return _non_empty(value, "input") or value


class TestCase(_Strict):
    """One of the agent's ``test_cases``: single-turn (``input``) or multi-turn (``turns``)."""

    __test__ = False  # not a pytest class

    name: str | None = None
    input: str | None = None
    expected_tools: ExpectedTools = None
    ground_truth: str | None = None
    files: list[dict[str, Any]] | None = Field(default=None, max_length=10)
    retrieval_context: list[str] | None = None
    evaluations: list[Any] | None = None
    turns: list[Turn] | None = None

    @field_validator("expected_tools", mode="before")
    @classmethod
    def _expected(cls, value: Any) -> Any:
        return _expected_entries(value)

    @field_validator("name", "input", "ground_truth")
    @classmethod
    def _filled(cls, value: str | None, info: ValidationInfo) -> str | None:
        return _non_empty(value, str(info.field_name))

    @model_validator(mode="after")
    def _single_or_multi(self) -> TestCase:
        if self.turns is None:
            if self.input is None:
                raise field_error("a test case needs input (or turns)", "input")
            return self
        if not self.turns:
            raise field_error("turns must not be empty", "turns")
        for name in ("input", "ground_truth", "expected_tools", "files", "retrieval_context"):
            if getattr(self, name) is not None:
                raise field_error(f"a multi-turn case (turns) cannot also set {name}", name)
        return self

    def expected_names(self) -> list[str]:
        """The expected tool names, turn by turn for a multi-turn case."""
        entries = [*(self.expected_tools or [])]
        for turn in self.turns or []:
            entries.extend(turn.expected_tools or [])
        return [e if isinstance(e, str) else e.name for e in entries]


# --- the agent -------------------------------------------------------------------------------


class Instructions(_Strict):
    """``instructions:`` ``file`` or ``inline``, exactly one (checked leniently: a warning)."""

    file: str | None = None
    inline: str | None = None

    @model_validator(mode="after")
    def _one(self) -> Instructions:
        if bool(self.file and self.file.strip()) == bool(self.inline and self.inline.strip()):
            raise field_error("give exactly one non-empty file or inline", "inline")
        return self


class Agent(BaseModel):
    """The agent file. Unknown top-level keys are kept (``model_extra``) and warned about."""

    model_config = ConfigDict(extra="allow")

    name: str
    description: str | None = None
    author: str | None = None
    model: LLMProvider
    instructions: Instructions | None = None
    response_format: dict[str, Any] | str | None = None
    tools: list[ToolUnion] | None = None
    tool_filtering: ToolFiltering | None = None
    evaluations: Any = None
    test_cases: list[TestCase] | None = None
    execution: Any = None
    observability: Any = None
    deployment: Any = None
    embedding_provider: LLMProvider | None = None
    claude: dict[str, Any] | None = None
    openai: dict[str, Any] | None = None

    @model_validator(mode="after")
    def _unique_tool_names(self) -> Agent:
        seen: set[str] = set()
        for index, tool in enumerate(self.tools or []):
            if tool.name in seen:
                message = f"tool name '{tool.name}' is used twice (names must be unique)"
                raise field_error(message, "tools", index, "name")
            seen.add(tool.name)
        return self


#: Top-level keys HoloDeck 0.6 knows (its ``Agent`` forbids any other) plus ``test_cases_file``,
#: which its loader resolves before validation.
KNOWN_TOP_LEVEL = frozenset(
    {
        "name",
        "description",
        "author",
        "model",
        "instructions",
        "response_format",
        "tools",
        "tool_filtering",
        "evaluations",
        "test_cases",
        "test_cases_file",
        "execution",
        "observability",
        "deployment",
        "embedding_provider",
        "claude",
    }
)
