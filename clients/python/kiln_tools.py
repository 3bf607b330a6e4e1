"""Kiln's tool definitions for the model APIs, and the one conversion they need.

Standard library only. The definitions are the generated files of docs/tools/
(docs/tools/README.md; `make tools` makes them from tools/definitions.py):

    import kiln_tools
    tools = kiln_tools.load("openai")            # Responses API function tools
    tools = kiln_tools.load("openai", chat=True) # the same, nested for Chat Completions
    tools = kiln_tools.load("anthropic")         # Messages API tools
    tools = kiln_tools.load("mcp")               # the MCP tools, as tools/list gives them

    # A strict-mode function call's arguments, as Kiln's tools take them:
    args = kiln_tools.from_openai_strict(call.name, call.arguments)

The files are looked for in $KILN_TOOLS_DIR, else in docs/tools of the repository
this file is in (clients/python/../../docs/tools).
"""
import json
import os

__all__ = ["APIS", "tools_dir", "load", "from_openai_strict", "VALUE_CELL_MEMBERS"]

APIS = ("mcp", "openai", "anthropic")

# In OpenAI's strict mode every member is required, and the model sends null for each
# one it means to leave out. Kiln's spec takes null as a value in a few places; the
# only member that is required there and may be null is a value cell's "value" (null:
# a blank cell, styled or formatted). In strict form a value cell is the one object
# whose members are exactly these (tests/e2e/test_tools.py checks both facts against
# docs/tools/openai.json).
VALUE_CELL_MEMBERS = frozenset({"value", "number_format", "style"})


def tools_dir():
    """The directory the tool files are read from."""
    env = os.environ.get("KILN_TOOLS_DIR")
    if env:
        return env
    here = os.path.dirname(os.path.abspath(__file__))
    return os.path.join(here, "..", "..", "docs", "tools")


def _read(name):
    with open(os.path.join(tools_dir(), name), encoding="utf-8") as fh:
        return json.load(fh)


def load(api, chat=False):
    """The tool list for `api`: "mcp" (the tools/list entries: name, title,
    description, inputSchema, outputSchema, annotations), "openai" (function tools,
    strict mode; Responses API form, or with chat=True the Chat Completions form
    {"type": "function", "function": {...}}) or "anthropic" ({name, description,
    input_schema}). A new list each call: the caller may change it."""
    if api == "mcp":
        return _read("mcp.json")["tools"]
    if api == "openai":
        tools = _read("openai.json")["tools"]
        if chat:
            return [{"type": "function",
                     "function": {k: v for k, v in t.items() if k != "type"}} for t in tools]
        return tools
    if api == "anthropic":
        return _read("anthropic.json")
    raise ValueError("unknown API %r (expected one of %s)" % (api, ", ".join(APIS)))


def _drop_nulls(node):
    if isinstance(node, list):
        # An array keeps its nulls: a blank cell in a row, a gap in a chart's values.
        return [_drop_nulls(v) for v in node]
    if isinstance(node, dict):
        keep_value = set(node) == VALUE_CELL_MEMBERS
        return {k: _drop_nulls(v) for k, v in node.items()
                if v is not None or (keep_value and k == "value")}
    return node


def from_openai_strict(tool_name, arguments):
    """The arguments of a strict-mode call of `tool_name` (a dict, or the JSON text
    OpenAI's APIs give) as Kiln's tools take them: every object member whose value is
    null is removed, since the model sent null for a member it left out, except the
    "value" of a value cell (an object whose members are exactly value, number_format
    and style), where null is the blank cell. Array elements are never removed. The
    arguments are not changed; a new dict is returned."""
    if isinstance(arguments, (str, bytes)):
        arguments = json.loads(arguments)
    if not isinstance(arguments, dict):
        raise TypeError("%s: the arguments are a JSON object, not %s"
                        % (tool_name, type(arguments).__name__))
    return _drop_nulls(arguments)
