"""Attribute and metric names: the OpenTelemetry GenAI semantic conventions' (plain strings:
the semconv package marks its gen_ai constants deprecated, moved to a repository that has
no package yet) and onedoor's own (``onedoor.*``)."""

from __future__ import annotations

# -- GenAI attributes ------------------------------------------------------------------
OPERATION = "gen_ai.operation.name"
INVOKE_AGENT = "invoke_agent"
EXECUTE_TOOL = "execute_tool"
PROVIDER = "gen_ai.provider.name"
AGENT_NAME = "gen_ai.agent.name"
CONVERSATION_ID = "gen_ai.conversation.id"
REQUEST_MODEL = "gen_ai.request.model"
RESPONSE_MODEL = "gen_ai.response.model"
FINISH_REASONS = "gen_ai.response.finish_reasons"
TIME_TO_FIRST_CHUNK = "gen_ai.response.time_to_first_chunk"
INPUT_TOKENS = "gen_ai.usage.input_tokens"
OUTPUT_TOKENS = "gen_ai.usage.output_tokens"
CACHE_READ_TOKENS = "gen_ai.usage.cache_read.input_tokens"
CACHE_WRITE_TOKENS = "gen_ai.usage.cache_creation.input_tokens"
REASONING_TOKENS = "gen_ai.usage.reasoning.output_tokens"
TOKEN_TYPE = "gen_ai.token.type"
TOOL_NAME = "gen_ai.tool.name"
TOOL_CALL_ID = "gen_ai.tool.call.id"
TOOL_TYPE = "gen_ai.tool.type"
TOOL_ARGUMENTS = "gen_ai.tool.call.arguments"
TOOL_RESULT = "gen_ai.tool.call.result"
INPUT_MESSAGES = "gen_ai.input.messages"
OUTPUT_MESSAGES = "gen_ai.output.messages"
ERROR_TYPE = "error.type"

# -- requests -----------------------------------------------------------------------------
HTTP_METHOD = "http.request.method"
HTTP_ROUTE = "http.route"
MCP_METHOD = "mcp.method.name"
RPC_METHOD = "rpc.method"

# -- onedoor's own ------------------------------------------------------------------------
DOOR = "onedoor.door"
TRANSPORT = "onedoor.transport"
REQUEST_METHOD = "onedoor.request.method"
PRINCIPAL = "onedoor.principal"
RUN_ID = "onedoor.run.id"
OUTCOME = "onedoor.run.outcome"
MODELS = "onedoor.usage.models"
REQUESTS = "onedoor.usage.requests"
COST = "onedoor.usage.cost"
CURRENCY = "onedoor.usage.currency"
QUESTION_ID = "onedoor.question.id"
QUESTION_KIND = "onedoor.question.kind"
QUESTION_PROMPT = "onedoor.question.prompt"
ANSWER_OUTCOME = "onedoor.answer.outcome"
ANSWER_HOW = "onedoor.answer.how"
REFUSAL_REASON = "onedoor.refusal.reason"

# -- metrics --------------------------------------------------------------------------------
TOKEN_USAGE = "gen_ai.client.token.usage"
OPERATION_DURATION = "gen_ai.client.operation.duration"
TIME_TO_FIRST_CHUNK_METRIC = "gen_ai.client.operation.time_to_first_chunk"
RUNS = "onedoor.runs"
RUNS_REFUSED = "onedoor.runs.refused"
RUNS_ACTIVE = "onedoor.runs.active"
RUNS_PARKED = "onedoor.runs.parked"
TOOL_DURATION = "gen_ai.execute_tool.duration"

# Bucket advice as opentelemetry-util-genai (and pydantic-ai) ship it.
TOKEN_BUCKETS = (1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864)
SECOND_BUCKETS = (0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92)
