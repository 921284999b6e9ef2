"""Every span attribute name the project reads or writes, spelled once.

Standard names come from the OpenTelemetry GenAI semantic conventions; what
the project adds lives under ``agent_replay.``; the tag names Jaeger JSON uses
for OTLP span fields are at the end. No other module spells an attribute or
tag name: import it from here.
"""

from __future__ import annotations

from typing import Final

SCHEMA_VERSION: Final = "1"
"""Version of the span schema written into ``agent_replay.schema_version``."""
SUPPORTED_SCHEMA_VERSIONS: Final = frozenset({SCHEMA_VERSION})

INSTRUMENTATION_NAME: Final = "otel_agent_replay"

# --- OpenTelemetry GenAI semantic conventions --------------------------------
GEN_AI_OPERATION_NAME: Final = "gen_ai.operation.name"
GEN_AI_AGENT_NAME: Final = "gen_ai.agent.name"
GEN_AI_CONVERSATION_ID: Final = "gen_ai.conversation.id"
GEN_AI_TOOL_NAME: Final = "gen_ai.tool.name"
GEN_AI_TOOL_CALL_ID: Final = "gen_ai.tool.call.id"
GEN_AI_TOOL_TYPE: Final = "gen_ai.tool.type"
GEN_AI_TOOL_CALL_ARGUMENTS: Final = "gen_ai.tool.call.arguments"
GEN_AI_TOOL_CALL_RESULT: Final = "gen_ai.tool.call.result"
GEN_AI_PROVIDER_NAME: Final = "gen_ai.provider.name"
GEN_AI_REQUEST_MODEL: Final = "gen_ai.request.model"
GEN_AI_REQUEST_STREAM: Final = "gen_ai.request.stream"
GEN_AI_RESPONSE_MODEL: Final = "gen_ai.response.model"
GEN_AI_RESPONSE_ID: Final = "gen_ai.response.id"
GEN_AI_RESPONSE_FINISH_REASONS: Final = "gen_ai.response.finish_reasons"
GEN_AI_USAGE_INPUT_TOKENS: Final = "gen_ai.usage.input_tokens"
GEN_AI_USAGE_OUTPUT_TOKENS: Final = "gen_ai.usage.output_tokens"
GEN_AI_INPUT_MESSAGES: Final = "gen_ai.input.messages"
GEN_AI_OUTPUT_MESSAGES: Final = "gen_ai.output.messages"
GEN_AI_SYSTEM_INSTRUCTIONS: Final = "gen_ai.system_instructions"
GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS: Final = "gen_ai.usage.cache_read.input_tokens"
GEN_AI_USAGE_CACHE_WRITE_INPUT_TOKENS: Final = "gen_ai.usage.cache_write.input_tokens"
"""Prompt-cache writes; written by older instrumentations as ``gen_ai.usage.cache_creation.input_tokens``."""
OLD_SPELLINGS: Final = {
    "gen_ai.usage.cache_creation.input_tokens": GEN_AI_USAGE_CACHE_WRITE_INPUT_TOKENS,
    "gen_ai.usage.cache_creation_input_tokens": GEN_AI_USAGE_CACHE_WRITE_INPUT_TOKENS,
    "gen_ai.usage.cache_read_input_tokens": GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS,
    "gen_ai.usage.prompt_tokens": GEN_AI_USAGE_INPUT_TOKENS,
    "gen_ai.usage.completion_tokens": GEN_AI_USAGE_OUTPUT_TOKENS,
    "gen_ai.prompt": GEN_AI_INPUT_MESSAGES,
    "gen_ai.completion": GEN_AI_OUTPUT_MESSAGES,
}
"""GenAI attribute names as older conventions (or other instrumentations) spelled them → the current name."""

# evaluation events (GenAI semantic conventions): one per evaluation, on the evaluated run's span
EVALUATION_EVENT: Final = "gen_ai.evaluation.result"
GEN_AI_EVALUATION_NAME: Final = "gen_ai.evaluation.name"
GEN_AI_EVALUATION_SCORE_VALUE: Final = "gen_ai.evaluation.score.value"
GEN_AI_EVALUATION_SCORE_LABEL: Final = "gen_ai.evaluation.score.label"
GEN_AI_EVALUATION_EXPLANATION: Final = "gen_ai.evaluation.explanation"

OP_INVOKE_AGENT: Final = "invoke_agent"
OP_EXECUTE_TOOL: Final = "execute_tool"
OP_CHAT: Final = "chat"
OP_EMBEDDINGS: Final = "embeddings"
TOOL_TYPE_FUNCTION: Final = "function"

# --- HTTP steps (OpenTelemetry HTTP client conventions) -------------------------
HTTP_REQUEST_METHOD: Final = "http.request.method"
HTTP_RESPONSE_STATUS_CODE: Final = "http.response.status_code"
SERVER_ADDRESS: Final = "server.address"
SERVER_PORT: Final = "server.port"
URL_PATH: Final = "url.path"

# --- exception event (OpenTelemetry semantic conventions) --------------------
EXCEPTION_EVENT: Final = "exception"
EXCEPTION_TYPE: Final = "exception.type"
EXCEPTION_MESSAGE: Final = "exception.message"

# --- agent_replay.* : run span ------------------------------------------------
RUN_ID: Final = "agent_replay.run_id"
AGENT_VERSION: Final = "agent_replay.agent_version"
TASK: Final = "agent_replay.task"
INPUT: Final = "agent_replay.input"
OUTPUT: Final = "agent_replay.output"
INPUT_HASH: Final = "agent_replay.input_hash"
RECORDED_AT: Final = "agent_replay.recorded_at"
MODE: Final = "agent_replay.mode"
REPLAY_OF: Final = "agent_replay.replay_of"
FORKED_FROM: Final = "agent_replay.forked_from"
"""On a forked run's span: ``{recorded run_id}:{step_id}`` of the recorded step where the replay forked
(the first edited step it served, else the step where it first diverged)."""
FORK_TAPE: Final = "agent_replay.fork.tape"
"""On a forked run's span: the recording's tape, as the replay was given it."""
FORK_EDIT: Final = "agent_replay.fork.edit"
"""On a forked run's span: JSON ``{step_id: value}`` of the edited steps it served (redacted; an exception
as ``{"raise": type, "message": …}``)."""
FORK_DIVERGED_AT: Final = "agent_replay.fork.diverged_at"
"""On a forked run's span: the recorded step where the live run first asked something else."""
REPETITION: Final = "agent_replay.repetition"
"""On a run of ``regress(..., repeat=k)``: which of the k repetitions of its case it was (1 to k)."""
DIVERGENCES: Final = "agent_replay.divergences"
"""On a run of ``regress``: the divergences its replay counted (drift, out-of-bounds calls, order …)."""
JUDGE_ERRORS: Final = "agent_replay.judge_errors"
"""On a run of ``regress``: why each evaluator that could not judge it failed (raised, returned nothing or
something that is not an ``Evaluation``); a run that carries any is ``error``, never a pass."""
SCHEMA_VERSION_ATTR: Final = "agent_replay.schema_version"
EVALUATION_JUDGE_MODEL: Final = "agent_replay.evaluation.judge_model"
"""On a ``gen_ai.evaluation.result`` event: the model that judged (absent for a rule)."""
EVALUATION_CRITERIA_VERSION: Final = "agent_replay.evaluation.criteria_version"
"""On a ``gen_ai.evaluation.result`` event: the version of the criteria it was judged by."""
# provenance: what a run was captured with, so fixture rot can be seen (``check --provenance``)
IMPLICIT_RUN: Final = "agent_replay.implicit"
"""True on the run span of a record block's implicit run (steps made outside every ``agent_run``)."""
SDK_VERSION: Final = "agent_replay.sdk_version"
"""The otel-agent-replay version that recorded the run."""
AGENT_COMMIT: Final = "agent_replay.agent_commit"
"""``git rev-parse HEAD`` of the working directory, when the agent ran in a git checkout."""
PYTHON_VERSION: Final = "agent_replay.python_version"
"""The harness: the Python version the agent ran on."""
RUN_STEPS: Final = "agent_replay.run.steps"
"""On a run span, written as the run ends: how many steps the run started (its highest seq), so ``check`` finds
a tape whose last steps were removed; absent on tapes recorded before it (they are checked without it)."""
MAX_STRING: Final = "agent_replay.max_string"
"""On a run span: the recording's ``max_string`` cap, when it was not the default (replay applies it too)."""
MAX_RESULT_BYTES: Final = "agent_replay.max_result_bytes"
"""On a run span: the recording's ``max_result_bytes`` cap, when it was not the default."""

MODE_RECORD: Final = "record"
MODE_REPLAY: Final = "replay"

# --- agent_replay.* : step spans ---------------------------------------------
STEP_ID: Final = "agent_replay.step_id"
PARENT_STEP_ID: Final = "agent_replay.parent_step_id"
SEQ: Final = "agent_replay.seq"
KIND: Final = "agent_replay.kind"
CALL_KEY: Final = "agent_replay.call_key"
STAND_INS: Final = "agent_replay.stand_ins"
"""The stand-ins a step's arguments hold, as a JSON object: stand-in -> the marker it stands for (the call
key is computed on the markers). ``check`` and the replayer read it (``capture.StandInTable``)."""
RESULT_STAND_INS: Final = "agent_replay.result_stand_ins"
"""The same for the stand-ins of a step's result."""
TARGET: Final = "agent_replay.target"
"""For a method step, the run-local name of the object it was called on (``Client#2``): the call key
leaves ``self`` out, so this tells two objects' calls apart (``stats`` retries)."""
TOOL_VERSION: Final = "agent_replay.tool_version"
SIDE_EFFECT: Final = "agent_replay.side_effect"
RESULT_SHA256: Final = "agent_replay.result_sha256"
RESULT_TRUNCATED: Final = "agent_replay.result_truncated"
EXPIRES_AT: Final = "agent_replay.expires_at"
FUNCTION: Final = "agent_replay.function"
MODEL_ARGUMENTS: Final = "agent_replay.model.arguments"
MODEL_RESULT: Final = "agent_replay.model.result"
RESULT_TYPE: Final = "agent_replay.result_type"
"""JSON: what the result's JSON cannot say about its type (a tuple, a datetime, a dataclass), for replay
to give back the same type; absent when the result is plain JSON."""
ERROR_ARGS: Final = "agent_replay.error.args"
"""JSON array: the args of the exception a failed step raised (redacted)."""

# --- agent_replay.process.* : steps (and runs) seen through the recording proxy ----------------
PROCESS_COMMAND: Final = "agent_replay.process.command"
"""The command whose HTTP the proxy turned into this step (``otel-agent-replay record TAPE -- CMD``): its
arguments joined by spaces, redacted like any argument."""
PROCESS_PID: Final = "agent_replay.process.pid"
"""The process id of that command."""
ERROR_ATTRIBUTES: Final = "agent_replay.error.attributes"
"""JSON object: the exception's public attributes that are plain JSON (``status_code``, ``code``), redacted."""
KEY_IGNORE: Final = "agent_replay.key_ignore"
"""JSON array: the paths left out of this step's call key when it was recorded (``key_ignore``)."""
STREAM_OFFSETS: Final = "agent_replay.stream.offsets_ns"
"""JSON array: for a streamed step (a generator), each chunk's offset from the step's start in ns; the
result is the array of chunks."""

# --- content: what the GenAI convention switch keeps from remote backends ----------
CONTENT_ATTRIBUTES: Final = frozenset(
    {
        GEN_AI_TOOL_CALL_ARGUMENTS,
        GEN_AI_TOOL_CALL_RESULT,
        GEN_AI_INPUT_MESSAGES,
        GEN_AI_OUTPUT_MESSAGES,
        GEN_AI_SYSTEM_INSTRUCTIONS,
        MODEL_ARGUMENTS,
        MODEL_RESULT,
        INPUT,
        OUTPUT,
    }
)
"""Attributes that carry arguments, results and messages. The tape always has them (redacted);
OTLP exporters get them only when ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`` is on."""

# --- resource attributes (OpenTelemetry semantic conventions) ------------------
SERVICE_NAME: Final = "service.name"


# --- Jaeger JSON tag names -----------------------------------------------------
# Jaeger has no span status, span kind or scope: the OTLP → Jaeger translation writes them as
# tags (and an event's name as a log field). These are not span attributes of ours; the loader
# reads them only to undo that translation, and they never end up in a Step's or Run's attributes.
JAEGER_STATUS_CODE: Final = "otel.status_code"
JAEGER_STATUS_DESCRIPTION: Final = "otel.status_description"
JAEGER_ERROR: Final = "error"
JAEGER_SPAN_KIND: Final = "span.kind"
JAEGER_EVENT_NAME: Final = "event"
JAEGER_STATUS_ERROR: Final = "ERROR"
"""The value of the ``otel.status_code`` tag on a span whose status is ERROR."""
JAEGER_STATUS_OK: Final = "OK"
JAEGER_SCOPE_NAME: Final = "otel.scope.name"
JAEGER_SCOPE_VERSION: Final = "otel.scope.version"
JAEGER_LIBRARY_NAME: Final = "otel.library.name"
JAEGER_LIBRARY_VERSION: Final = "otel.library.version"
JAEGER_SPAN_FORMAT: Final = "internal.span.format"
JAEGER_TRACE_STATE: Final = "w3c.tracestate"
JAEGER_FIELD_TAGS: Final = frozenset(
    {
        JAEGER_STATUS_CODE,
        JAEGER_STATUS_DESCRIPTION,
        JAEGER_ERROR,
        JAEGER_SPAN_KIND,
        JAEGER_SCOPE_NAME,
        JAEGER_SCOPE_VERSION,
        JAEGER_LIBRARY_NAME,
        JAEGER_LIBRARY_VERSION,
        JAEGER_SPAN_FORMAT,
        JAEGER_TRACE_STATE,
    }
)
"""Tags that carry an OTLP span field rather than an attribute: never copied into attributes."""


def run_span_name(agent_name: str) -> str:
    """Name of a run span: ``invoke_agent {agent}``."""
    return f"{OP_INVOKE_AGENT} {agent_name}"


def tool_span_name(tool_name: str) -> str:
    """Name of a tool step span: ``execute_tool {tool}``."""
    return f"{OP_EXECUTE_TOOL} {tool_name}"


def model_span_name(model: str) -> str:
    """Name of a model step span: ``chat {model}``."""
    return f"{OP_CHAT} {model}"
