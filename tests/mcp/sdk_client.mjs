// The official MCP TypeScript SDK's Client driving Kiln (tests/e2e/test_mcp_clients.py):
// `kiln mcp` over stdio, or `kiln serve`'s /mcp over Streamable HTTP.
//
//   node tests/mcp/sdk_client.mjs '{"transport": "stdio", "command": "bin/kiln", "args": ["mcp"],
//                                   "version": "2025-06-18", "out": "/tmp/x", "scenarios": [...]}'
//   node tests/mcp/sdk_client.mjs '{"transport": "http", "url": "http://127.0.0.1:N/mcp",
//                                   "key": "KEY1", "other_key": "KEY2", ...}'
//
// "version" is the protocol revision the client opens with: absent or null, the SDK's own
// (LATEST_PROTOCOL_VERSION, which its Client always sends); a revision, a wrapper of the
// transport rewrites the initialize request's protocolVersion to it, and the server must
// answer with it (the SDK has no option for this). Each scenario checks what it can here;
// what needs Python's readers (the .xlsx, the PNG) is written into "out" and named in the
// result. The result is one JSON object on stdout: {"sdk", "asked", "negotiated", "results":
// {scenario: {...}}, "failures": ["scenario: what went wrong", ...]}; the exit status is 1
// when there is a failure, 2 when the driver itself could not run.
import { readFileSync, writeFileSync, mkdirSync } from "node:fs";
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { LATEST_PROTOCOL_VERSION, SUPPORTED_PROTOCOL_VERSIONS, McpError } from "@modelcontextprotocol/sdk/types.js";

const HERE = dirname(fileURLToPath(import.meta.url));
const SDK_VERSION = JSON.parse(
  readFileSync(join(HERE, "node_modules/@modelcontextprotocol/sdk/package.json"), "utf8")).version;
const TOOLS = ["execute_code", "list_files", "load_file", "render_document"];
const HINTS = ["readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"];
const FILE_URI = /^kiln:\/\/files\/[^/]+$/;
const PNG_MAGIC = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
const ZIP_MAGIC = Buffer.from([0x50, 0x4b, 0x03, 0x04]);
const RUNNING = "kiln-long-cell-is-running";
const XLSX_TYPE = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet";

const cfg = JSON.parse(process.argv[2] || "{}");
const out = { sdk: SDK_VERSION, sdk_latest: LATEST_PROTOCOL_VERSION, sdk_supported: SUPPORTED_PROTOCOL_VERSIONS,
  transport: cfg.transport, asked: cfg.version || LATEST_PROTOCOL_VERSION, negotiated: null, results: {},
  failures: [] };

class Failure extends Error {}
function check(cond, what, detail) {
  if (!cond) {
    throw new Failure(what + (detail === undefined ? "" : ": " + JSON.stringify(detail).slice(0, 1500)));
  }
}
const texts = (result) => (result.content || []).filter((c) => c.type === "text").map((c) => c.text).join("\n");

// A transport as the Client sees it, with what went over it recorded: the initialize
// request rewritten to the revision asked for, and every message the server sent.
function instrument(transport, version, seen) {
  const send = transport.send.bind(transport);
  transport.send = (message, options) => {
    if (version && message.method === "initialize") {
      message = { ...message, params: { ...message.params, protocolVersion: version } };
    }
    seen.sent.push(message);
    return send(message, options);
  };
  let handler;
  Object.defineProperty(transport, "onmessage", {
    configurable: true,
    get: () => handler,
    set: (h) => {
      handler = h && ((message, extra) => {
        seen.received.push(message);
        h(message, extra);
      });
    },
  });
  return transport;
}

function newTransport(key) {
  if (cfg.transport === "stdio") {
    // The whole environment: under ASan the server needs ASAN_OPTIONS and LSAN_OPTIONS,
    // which the SDK's default environment (HOME, PATH, ...) leaves out.
    return new StdioClientTransport({ command: cfg.command, args: cfg.args || [], env: { ...process.env },
      stderr: "pipe" });
  }
  return new StreamableHTTPClientTransport(new URL(cfg.url),
    { requestInit: { headers: { Authorization: "Bearer " + key } } });
}

async function connect(key) {
  const seen = { sent: [], received: [], errors: [], stderr: "" };
  const transport = instrument(newTransport(key), cfg.version, seen);
  const client = new Client({ name: "kiln-tests-sdk-client", version: SDK_VERSION }, { capabilities: {} });
  client.onerror = (e) => seen.errors.push(String(e && e.message || e));
  if (transport.stderr) {   // the server's log (stdio): kept for the report when a check fails
    transport.stderr.on("data", (d) => { seen.stderr = (seen.stderr + d.toString()).slice(-8000); });
  }
  await client.connect(transport, { timeout: 60000 });
  const init = seen.received.find((m) => m.id !== undefined && m.result && m.result.protocolVersion);
  return { client, transport, seen, init: init ? init.result : null };
}

async function call(client, name, args, options) {
  return client.callTool({ name, arguments: args }, undefined, { timeout: 120000, ...options });
}

async function execute(client, code, extra) {
  const r = await call(client, "execute_code", { code, ...extra });
  check(r.structuredContent && typeof r.structuredContent === "object", "execute_code: no structuredContent", r);
  return r;
}

// --------------------------------------------------------------------------- scenarios

const scenarios = {};

scenarios.tools = async ({ client }) => {
  const { tools } = await client.listTools();
  const names = tools.map((t) => t.name).sort();
  check(JSON.stringify(names) === JSON.stringify(TOOLS), "tools/list: not the four tools", names);
  for (const t of tools) {
    check(typeof t.title === "string" && t.title.length > 0, t.name + ": no title", t);
    check(typeof t.description === "string" && t.description.length > 20, t.name + ": no description", t);
    check(t.inputSchema && t.inputSchema.type === "object", t.name + ": inputSchema not an object schema", t.inputSchema);
    check(t.outputSchema && t.outputSchema.type === "object", t.name + ": outputSchema not an object schema",
      t.outputSchema);
    check(t.annotations && typeof t.annotations === "object", t.name + ": no annotations", t);
    for (const h of HINTS) {
      check(typeof t.annotations[h] === "boolean", t.name + ": annotations." + h + " is not a boolean", t.annotations);
    }
  }
  const byName = Object.fromEntries(tools.map((t) => [t.name, t]));
  check((byName.execute_code.inputSchema.required || []).includes("code"), "execute_code: code not required",
    byName.execute_code.inputSchema);
  const templates = await client.listResourceTemplates();
  const uris = (templates.resourceTemplates || []).map((t) => t.uriTemplate);
  check(uris.includes("kiln://files/{id}"), "resources/templates/list: no kiln://files/{id}", templates);
  return { names, annotations: Object.fromEntries(tools.map((t) => [t.name, t.annotations])),
    templates: uris };
};

scenarios.state = async ({ client }) => {
  const a = await execute(client, "x = 41");
  check(!a.isError && a.structuredContent.status === "ok", "x = 41 failed", a);
  const sid = a.structuredContent.session_id;
  check(typeof sid === "string" && sid.length > 0, "no session_id", a.structuredContent);
  const b = await execute(client, "x + 1");
  check(!b.isError && b.structuredContent.status === "ok", "x + 1 failed", b);
  check(b.structuredContent.session_id === sid, "the second call ran in another session",
    [sid, b.structuredContent.session_id]);
  check(/(^|\s)42(\s|$)/m.test(texts(b)), "x + 1 did not give 42 in the content", b.content);
  const result = (b.structuredContent.outputs || []).find((o) => o.type === "result");
  check(result && result.data && result.data["text/plain"] === "42", "the cell record's result is not 42",
    b.structuredContent.outputs);
  check(b.structuredContent.execution_count === a.structuredContent.execution_count + 1,
    "execution_count did not go up by one", [a.structuredContent.execution_count, b.structuredContent.execution_count]);
  // the session_id passed back names the same session
  const c = await execute(client, "x * 2", { session_id: sid });
  check(!c.isError && /(^|\s)82(\s|$)/m.test(texts(c)), "x * 2 with the session_id passed back did not give 82", c);
  // an exception: isError with the traceback in the content
  const d = await execute(client, "1 / 0");
  check(d.isError === true && d.structuredContent.status === "error", "1 / 0 is not isError", d);
  check(texts(d).includes("ZeroDivisionError"), "the traceback is not in the content", d.content);
  return { session_id: sid, text: texts(b), execution_counts: [a, b, c, d].map((r) => r.structuredContent.execution_count) };
};

scenarios.figure = async ({ client }) => {
  const code = "import matplotlib.pyplot as plt\n" +
    "fig, ax = plt.subplots()\nax.plot([1, 2, 3], [4, 1, 9])\n" +
    "fig.savefig('/mnt/data/figure.png')\nplt.show()\nprint('drawn')";
  const r = await execute(client, code);
  check(!r.isError, "the figure cell failed", r);
  const images = r.content.filter((c) => c.type === "image");
  check(images.length === 1, "not one image content item", r.content.map((c) => c.type));
  check(images[0].mimeType === "image/png", "the image is not image/png", images[0].mimeType);
  const png = Buffer.from(images[0].data, "base64");
  check(png.subarray(0, 8).equals(PNG_MAGIC), "the image does not decode to a PNG", png.subarray(0, 16).toString("hex"));
  const path = join(cfg.out, out.transport + "-" + out.asked + "-figure.png");
  writeFileSync(path, png);
  // the file the cell saved: in files[] with a kiln:// uri, and a resource_link
  const files = r.structuredContent.files || [];
  const saved = files.find((f) => f.name === "figure.png");
  check(saved && FILE_URI.test(saved.uri || ""), "figure.png not in files[] with a kiln:// uri", files);
  const links = r.content.filter((c) => c.type === "resource_link");
  check(links.some((l) => l.uri === saved.uri), "no resource_link to figure.png", r.content);
  const listed = await call(client, "list_files", {});
  check(!listed.isError && (listed.structuredContent.files || []).some((f) => f.name === "figure.png"),
    "list_files does not list figure.png", listed.structuredContent);
  const read = await client.readResource({ uri: saved.uri });
  const blob = Buffer.from(read.contents[0].blob || "", "base64");
  check(blob.subarray(0, 8).equals(PNG_MAGIC), "figure.png read back is not a PNG", read.contents[0]);
  return { png: path, bytes: png.length, file: saved, listed: listed.structuredContent.files.map((f) => f.name) };
};

scenarios.render = async ({ client }) => {
  const spec = cfg.render_spec;
  const r = await call(client, "render_document", { format: "xlsx", spec, filename: "mcp.xlsx" });
  check(!r.isError, "render_document failed", r);
  const sc = r.structuredContent;
  check(sc && FILE_URI.test(sc.uri || "") && sc.media_type === XLSX_TYPE, "structuredContent is not a file link", sc);
  const links = r.content.filter((c) => c.type === "resource_link");
  check(links.length === 1 && links[0].uri === sc.uri, "content has no resource_link to the document", r.content);
  const read = await client.readResource({ uri: links[0].uri });
  check(read.contents.length === 1 && read.contents[0].uri === sc.uri, "resources/read: not one content", read);
  const c0 = read.contents[0];
  check(typeof c0.blob === "string" && c0.text === undefined, "resources/read: not a blob", Object.keys(c0));
  check(c0.mimeType === XLSX_TYPE, "resources/read: mimeType", c0.mimeType);
  const data = Buffer.from(c0.blob, "base64");
  check(data.length === sc.bytes && data.subarray(0, 4).equals(ZIP_MAGIC), "the blob is not the document",
    [data.length, sc.bytes]);
  const path = join(cfg.out, out.transport + "-" + out.asked + "-render.xlsx");
  writeFileSync(path, data);
  return { xlsx: path, structured: sc, link: links[0] };
};

scenarios.bad_spec = async ({ client }) => {
  const r = await call(client, "render_document", { format: "xlsx", spec: cfg.bad_spec });
  check(r.isError === true, "a bad spec is not isError", r);
  const errors = (r.structuredContent || {}).errors;
  check(Array.isArray(errors) && errors.length > 0, "no errors[] in structuredContent", r.structuredContent);
  const text = texts(r);
  for (const e of errors) {
    check(typeof e.pointer === "string" && (e.pointer === "" || e.pointer.startsWith("/")),
      "an error without a JSON Pointer", e);
    check(typeof e.code === "string" && typeof e.message === "string", "an error without code and message", e);
    check(text.includes(e.pointer + ": " + e.message), "the content text does not list " + e.pointer, text);
  }
  return { errors, dropped: r.structuredContent.dropped, text };
};

scenarios.cancel = async ({ client, seen }) => {
  await execute(client, "marker = 'before'");
  // The long cell marks that it ran, says so on stdout (a progress notification names the
  // output chunk: then it is cancelled; without one, after cancel_wait_ms), and would
  // mark its end.
  const controller = new AbortController();
  let progressed = 0;
  let started;
  const startedP = new Promise((resolve) => { started = resolve; });
  const code = "import time\nmarker = 'running'\nprint('" + RUNNING + "', flush=True)\ntime.sleep(60)\n" +
    "marker = 'finished'";
  const t0 = Date.now();
  const pending = call(client, "execute_code", { code }, {
    signal: controller.signal,
    onprogress: (p) => {
      progressed++;
      if (String(p.message || "").includes(RUNNING)) {
        started();
      }
    },
  });
  const outcome = pending.then(() => "answered", (e) => e);
  await Promise.race([startedP, new Promise((r) => setTimeout(r, cfg.cancel_wait_ms || 3000))]);
  const before = seen.sent.length;
  controller.abort("the test cancels the long cell");
  const err = await outcome;
  check(err !== "answered", "the cancelled call was answered", err);
  const cancelled = seen.sent.slice(before).find((m) => m.method === "notifications/cancelled");
  check(cancelled, "the SDK sent no notifications/cancelled", seen.sent.slice(before));
  const id = cancelled.params.requestId;
  const after = await execute(client, "marker");
  const elapsed = Date.now() - t0;
  check(!after.isError, "the session did not survive the cancellation", after);
  const value = ((after.structuredContent.outputs || []).find((o) => o.type === "result") || {}).data;
  check(value && value["text/plain"] === "'running'",
    "the long cell did not start, or ran to its end (marker should be 'running')", value);
  // the server sends no reply to a cancelled request (a late one would be tolerated, and is noted)
  await new Promise((r) => setTimeout(r, 200));
  const replied = seen.received.some((m) => m.id === id && (m.result || m.error));
  return { request_id: id, progress_notifications: progressed, marker: value["text/plain"],
    replied_after_cancel: replied, seconds_to_next_result: elapsed / 1000, error: String(err && err.message || err) };
};

scenarios.load_file = async ({ client }) => {
  const r = await call(client, "load_file", { path: cfg.load_path, name: "loaded.csv" });
  check(!r.isError && r.structuredContent.name === "loaded.csv", "load_file failed", r);
  const c = await execute(client, "open('/mnt/data/loaded.csv').read()");
  check(!c.isError && texts(c).includes(cfg.load_marker), "the loaded file is not in /mnt/data", c);
  // a link out of the allowed directory is refused (how the refusal reaches the client is
  // tool_errors' to check: here an exception from the SDK counts as a refusal too)
  let denied;
  try {
    denied = await call(client, "load_file", { path: cfg.denied_path, name: "leak.txt" });
    check(denied.isError === true, "load_file of a link out of --allow-read is not isError", denied);
    denied = texts(denied);
  } catch (e) {
    if (e instanceof Failure) {
      throw e;
    }
    denied = "exception: " + e.message;
  }
  const leak = await execute(client, "import os\nos.path.exists('/mnt/data/leak.txt')");
  check(texts(leak).includes("False"), "the refused file is in /mnt/data", leak.content);
  return { loaded: r.structuredContent, denied };
};

// Bad arguments and refusals come back as tool results with isError (the model reads them),
// through the SDK's callTool, which checks every structuredContent against the tool's
// outputSchema, an error's too (MCP 2025-11-25 server/tools: structured results MUST
// conform to it): a schema that does not admit the error's shape turns it into an
// exception in the host, and the model never sees it.
scenarios.tool_errors = async ({ client }) => {
  const cases = [
    ["execute_code", { code: 1 }],
    ["execute_code", { code: "1", language: "cobol" }],
    ["list_files", { session_id: "no-such-session" }],
    ["load_file", { path: cfg.denied_path || "/nonexistent/file" }],
    ["render_document", { format: "odt", spec: { sheets: [] } }],
  ];
  const seen = [];
  const wrong = [];
  for (const [name, args] of cases) {
    const what = name + " " + JSON.stringify(args);
    let r;
    try {
      r = await call(client, name, args);
    } catch (e) {
      wrong.push(what + ": the SDK threw instead of returning the isError result: " + (e && e.message));
      continue;
    }
    if (r.isError !== true || texts(r).length === 0) {
      wrong.push(what + ": not isError with text: " + JSON.stringify(r).slice(0, 500));
    }
    seen.push({ tool: name, text: texts(r), structured: r.structuredContent || null });
  }
  check(wrong.length === 0, wrong.length + " of " + cases.length + " error results did not reach the client:\n  " +
    wrong.join("\n  "));
  let unknown;
  try {
    unknown = await call(client, "no_such_tool", {});
  } catch (e) {
    unknown = e;
  }
  check(unknown instanceof McpError && unknown.code === -32602, "an unknown tool is not JSON-RPC error -32602",
    String(unknown));
  return { results: seen };
};

// Another tenant (another API key) reaches neither the first one's file nor its session.
scenarios.tenant = async ({ client }, state) => {
  const uri = state.render && state.render.structured.uri;
  check(uri, "tenant: needs the render scenario first");
  const sid = state.state && state.state.session_id;
  const other = await connect(cfg.other_key);
  try {
    let read;
    try {
      read = await other.client.readResource({ uri });
    } catch (e) {
      read = e;
    }
    check(read instanceof McpError, "another tenant read the file", read);
    // (this client has not listed the tools, so the SDK does not check the error's
    // structuredContent against execute_code's outputSchema: tool_errors does that)
    const r = await call(other.client, "execute_code", { code: "x", session_id: sid });
    check(r.isError === true && !/Out\[\d+\]: 41/.test(texts(r)), "another tenant ran a cell in the session", r);
    // the file is still the first tenant's
    const mine = await client.readResource({ uri });
    check(mine.contents.length === 1, "the owner can no longer read the file", mine);
    return { read_error: { code: read.code, message: read.message }, execute_error: texts(r) };
  } finally {
    await other.client.close();
  }
};

// The client offers each revision; the server answers with it when it speaks it, else with
// one it does (the SDK checks that it knows the answer).
scenarios.negotiate = async () => {
  const answers = {};
  for (const v of cfg.offer || []) {
    const seen = { sent: [], received: [] };
    const transport = instrument(newTransport(cfg.key), v, seen);
    const client = new Client({ name: "kiln-tests-negotiate", version: SDK_VERSION });
    try {
      await client.connect(transport, { timeout: 60000 });
      const init = seen.received.find((m) => m.result && m.result.protocolVersion);
      answers[v] = init.result.protocolVersion;
    } catch (e) {
      answers[v] = "error: " + (e && e.message || e);
    } finally {
      await client.close();
    }
  }
  return { answers };
};

// --------------------------------------------------------------------------- main

async function main() {
  mkdirSync(cfg.out, { recursive: true });
  const conn = await connect(cfg.key);
  out.negotiated = conn.init && conn.init.protocolVersion;
  out.server_info = conn.init && conn.init.serverInfo;
  out.capabilities = conn.init && conn.init.capabilities;
  out.session_id_header = conn.transport.sessionId || null;
  if (cfg.version && out.negotiated !== cfg.version) {
    out.failures.push("initialize: asked for " + cfg.version + ", the server answered " + out.negotiated);
  }
  const state = {};
  for (const name of cfg.scenarios || []) {
    try {
      state[name] = await scenarios[name](conn, state);
      out.results[name] = state[name];
    } catch (e) {
      out.failures.push(name + ": " + (e instanceof Failure ? e.message : (e && e.stack) || String(e)));
    }
  }
  if (cfg.transport === "http") {
    await conn.transport.terminateSession().catch((e) => out.failures.push("DELETE: " + e.message));
  }
  const proc = conn.transport._process;
  await conn.client.close();
  if (proc) {
    if (proc.exitCode === null && proc.signalCode === null) {
      await new Promise((r) => proc.once("close", r));
    }
    out.exit = { code: proc.exitCode, signal: proc.signalCode };
  }
  out.client_errors = conn.seen.errors;
  if (out.failures.length) {
    out.server_stderr = conn.seen.stderr;
  }
}

main().then(() => {
  process.stdout.write(JSON.stringify(out) + "\n");
  process.exit(out.failures.length ? 1 : 0);
}, (e) => {
  out.failures.push("driver: " + ((e && e.stack) || String(e)));
  process.stdout.write(JSON.stringify(out) + "\n");
  process.exit(2);
});
