#!/usr/bin/env python3
"""One turn of an OpenAI Chat Completions tool loop, replayed against a live Kiln.

Loads a recorded model response (recorded/openai_chat_turn.json, a chat.completion whose
message has two tool_calls, render_document and execute_code, their arguments in strict
mode's form), carries out each call with kiln_client, answers each with a role "tool"
message ({"role": "tool", "tool_call_id", "content"}: text, since a tool message holds
text only; the figures a cell drew follow in one user message of image_url parts) and
prints the body of the next POST /v1/chat/completions the loop would send (no vendor SDK,
no network beyond Kiln):

    python3 clients/examples/openai_chat_loop.py --url http://127.0.0.1:8080 --key KEY

docs/assistants.md explains the mapping.
"""
import json

from kiln_tools_runner import ToolRunner, arguments, kiln_client, load_json, say

import kiln_tools  # noqa: E402 (clients/python, which kiln_tools_runner puts on the path)

MODEL = "gpt-4.1-2025-04-14"
SYSTEM = ("You are an analyst. Make files with render_document and compute with "
          "execute_code; give the user the download links the tools return.")
USER = ("Make me a spreadsheet of units sold by region (North 412, South 298, East 377, "
        "West 251) with a total, and chart the figures.")


def tool_message(call_id, result):
    """A Kiln result as a role "tool" message (text only)."""
    return {"role": "tool", "tool_call_id": call_id, "content": result.text}


def images_message(figures):
    """The figures of the calls ([(call id, media type, base64)]) as one user message:
    a tool message cannot hold images."""
    content = []
    for call_id, mime, data in figures:
        content.append({"type": "text", "text": "A figure from tool call %s:" % call_id})
        content.append({"type": "image_url",
                        "image_url": {"url": "data:%s;base64,%s" % (mime, data)}})
    return {"role": "user", "content": content}


def carry_out(message, runner):
    """Every tool call of the assistant message carried out: the messages that answer
    them (a tool message each, in order, then the figures)."""
    answers, figures = [], []
    for call in message.get("tool_calls") or []:
        fn = call["function"]
        args = kiln_tools.from_openai_strict(fn["name"], json.loads(fn["arguments"]))
        say("%s %s ..." % (call["id"], fn["name"]))
        result = runner.call(fn["name"], args)
        say("  -> %r" % result)
        answers.append(tool_message(call["id"], result))
        figures += [(call["id"], mime, data) for mime, data in result.images]
    if figures:
        answers.append(images_message(figures))
    return answers


def next_request(completion, answers):
    """The next request: the conversation so far, the assistant's message as it came,
    the answers, the same tools."""
    message = completion["choices"][0]["message"]
    messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": USER},
                message] + answers
    return {"model": MODEL, "messages": messages, "tools": kiln_tools.load("openai", chat=True),
            "parallel_tool_calls": True}


def main():
    a = arguments(__doc__.splitlines()[0], "openai_chat_turn.json")
    completion = load_json(a.turn)
    runner = ToolRunner(kiln_client.Client(a.url, a.key))
    try:
        answers = carry_out(completion["choices"][0]["message"], runner)
    finally:
        runner.close()
    print(json.dumps(next_request(completion, answers), indent=2))


if __name__ == "__main__":
    main()
