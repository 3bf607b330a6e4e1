#!/usr/bin/env python3
"""One turn of an Anthropic Messages API tool loop, replayed against a live Kiln.

Loads a recorded model response (recorded/anthropic_turn.json, a Messages API message
with stop_reason "tool_use" and two tool_use blocks, render_document and execute_code),
carries out each call with kiln_client, answers them in one user message of tool_result
blocks ({"type": "tool_result", "tool_use_id", "content": text and image blocks,
"is_error"}) and prints the body of the next POST /v1/messages the loop would send (no
vendor SDK, no network beyond Kiln):

    python3 clients/examples/anthropic_loop.py --url http://127.0.0.1:8080 --key KEY

docs/assistants.md explains the mapping.
"""
import json

from kiln_tools_runner import ToolRunner, arguments, kiln_client, load_json, say

import kiln_tools  # noqa: E402 (clients/python, which kiln_tools_runner puts on the path)

MODEL = "claude-sonnet-4-5-20250929"
MAX_TOKENS = 4096
SYSTEM = ("You are an analyst. Make files with render_document and compute with "
          "execute_code; give the user the download links the tools return.")
USER = ("Make me a spreadsheet of units sold by region (North 412, South 298, East 377, "
        "West 251) with a total, and chart the figures.")


def tool_result(tool_use_id, result):
    """A Kiln result as a tool_result block: the text, then each figure as an image block."""
    content = [{"type": "text", "text": result.text}]
    for mime, data in result.images:
        content.append({"type": "image",
                        "source": {"type": "base64", "media_type": mime, "data": data}})
    return {"type": "tool_result", "tool_use_id": tool_use_id, "content": content,
            "is_error": result.is_error}


def carry_out(message, runner):
    """Every tool_use block carried out: the user message of their tool_result blocks
    (all of them, in order, and nothing before them)."""
    blocks = []
    for block in message["content"]:
        if block.get("type") != "tool_use":
            continue
        say("%s %s ..." % (block["id"], block["name"]))
        result = runner.call(block["name"], block["input"])
        say("  -> %r" % result)
        blocks.append(tool_result(block["id"], result))
    return {"role": "user", "content": blocks}


def next_request(message, answer):
    """The next request: the conversation so far, the assistant's content as it came,
    the answer, the same tools (docs/tools/anthropic.json, kiln_tools.load)."""
    return {"model": MODEL, "max_tokens": MAX_TOKENS, "system": SYSTEM,
            "tools": kiln_tools.load("anthropic"),
            "messages": [{"role": "user", "content": USER},
                         {"role": "assistant", "content": message["content"]}, answer]}


def main():
    a = arguments(__doc__.splitlines()[0], "anthropic_turn.json")
    message = load_json(a.turn)
    runner = ToolRunner(kiln_client.Client(a.url, a.key))
    try:
        answer = carry_out(message, runner)
    finally:
        runner.close()
    print(json.dumps(next_request(message, answer), indent=2))


if __name__ == "__main__":
    main()
