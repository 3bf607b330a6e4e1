#!/usr/bin/env python3
"""One turn of an OpenAI Responses API tool loop, replayed against a live Kiln.

Loads a recorded model response (recorded/openai_responses_turn.json, the Responses API's
response object: two `function_call` items, render_document and execute_code, their
arguments in strict mode's form), carries out each call with kiln_client, turns each
result into a `function_call_output` item ({"type", "call_id", "output"}: the output a
string, or a list of input_text and input_image parts when the cell drew figures) and
prints the body of the next POST /v1/responses the loop would send (no vendor SDK, no
network beyond Kiln):

    python3 clients/examples/openai_responses_loop.py --url http://127.0.0.1:8080 --key KEY

docs/assistants.md explains the mapping.
"""
import json

from kiln_tools_runner import ToolRunner, arguments, kiln_client, load_json, say

import kiln_tools  # noqa: E402 (clients/python, which kiln_tools_runner puts on the path)

# The request that produced the recorded turn (its tools: docs/tools/openai.json,
# kiln_tools.load("openai")).
MODEL = "gpt-4.1-2025-04-14"
INSTRUCTIONS = ("You are an analyst. Make files with render_document and compute with "
                "execute_code; give the user the download links the tools return.")
USER = ("Make me a spreadsheet of units sold by region (North 412, South 298, East 377, "
        "West 251) with a total, and chart the figures.")


def function_call_output(call_id, result):
    """A Kiln result as the Responses API's function_call_output item."""
    if not result.images:
        output = result.text
    else:
        output = [{"type": "input_text", "text": result.text}] + [
            {"type": "input_image", "image_url": "data:%s;base64,%s" % (mime, data)}
            for mime, data in result.images]
    return {"type": "function_call_output", "call_id": call_id, "output": output}


def carry_out(response, runner):
    """Every function_call of a response carried out: its function_call_output items."""
    outputs = []
    for item in response["output"]:
        if item.get("type") != "function_call":
            continue
        args = kiln_tools.from_openai_strict(item["name"], json.loads(item["arguments"]))
        say("%s %s ..." % (item["call_id"], item["name"]))
        result = runner.call(item["name"], args)
        say("  -> %r" % result)
        outputs.append(function_call_output(item["call_id"], result))
    return outputs


def next_request(response, outputs):
    """The next request: the conversation so far (the user's message, the model's output
    items as they came) and the outputs, with the same tools."""
    first = [{"role": "user", "content": [{"type": "input_text", "text": USER}]}]
    return {"model": MODEL, "instructions": INSTRUCTIONS,
            "input": first + response["output"] + outputs,
            "tools": kiln_tools.load("openai"), "parallel_tool_calls": response["parallel_tool_calls"]}


def main():
    a = arguments(__doc__.splitlines()[0], "openai_responses_turn.json")
    response = load_json(a.turn)
    runner = ToolRunner(kiln_client.Client(a.url, a.key))
    try:
        outputs = carry_out(response, runner)
    finally:
        runner.close()
    print(json.dumps(next_request(response, outputs), indent=2))


if __name__ == "__main__":
    main()
