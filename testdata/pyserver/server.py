#!/usr/bin/env python3
"""A minimal stdio MCP server in Python's standard library only.

Newline-delimited JSON-RPC 2.0 on stdin/stdout (the MCP stdio transport):
initialize, notifications/initialized, ping, tools/list and tools/call.
Tools:

    echo(text)   returns text
    fetch(url)   GET url with urllib.request, which honours http_proxy,
                 https_proxy and no_proxy; returns "STATUS BODY" (body up
                 to 4 KiB), or an isError result naming the error
    read(path)   the file's text (up to 4 KiB), or an isError result

The sandbox tests (sandbox/native/realservers_test.go) run it inside
toolhost's native sandbox. Logs go to stderr.
"""

import json
import sys
import urllib.request

PROTOCOL = "2025-06-18"

TOOLS = [
    {
        "name": "echo",
        "description": "Return the text.",
        "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
    },
    {
        "name": "fetch",
        "description": "GET a URL (urllib, honours http_proxy).",
        "inputSchema": {"type": "object", "properties": {"url": {"type": "string"}}, "required": ["url"]},
    },
    {
        "name": "read",
        "description": "Read a text file.",
        "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
    },
]


def log(msg):
    print("pyserver: " + msg, file=sys.stderr, flush=True)


def result(text, error=False):
    return {"content": [{"type": "text", "text": text}], "isError": error}


def call(name, args):
    if name == "echo":
        return result(str(args.get("text", "")))
    if name == "fetch":
        try:
            with urllib.request.urlopen(args["url"], timeout=10) as resp:
                return result("%d %s" % (resp.status, resp.read(4096).decode("utf-8", "replace")))
        except Exception as e:  # every failure is the tool's answer
            return result("%s: %s" % (type(e).__name__, e), error=True)
    if name == "read":
        try:
            with open(args["path"], encoding="utf-8", errors="replace") as f:
                return result(f.read(4096))
        except Exception as e:
            return result("%s: %s" % (type(e).__name__, e), error=True)
    return None


def handle(msg):
    method, mid = msg.get("method"), msg.get("id")
    if mid is None:
        return None  # a notification
    params = msg.get("params") or {}
    if method == "initialize":
        res = {
            "protocolVersion": params.get("protocolVersion", PROTOCOL),
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "pyserver", "version": "1.0.0"},
        }
    elif method == "ping":
        res = {}
    elif method == "tools/list":
        res = {"tools": TOOLS}
    elif method == "tools/call":
        res = call(params.get("name"), params.get("arguments") or {})
        if res is None:
            return {"jsonrpc": "2.0", "id": mid, "error": {"code": -32602, "message": "unknown tool %r" % params.get("name")}}
    else:
        return {"jsonrpc": "2.0", "id": mid, "error": {"code": -32601, "message": "method not found: %s" % method}}
    return {"jsonrpc": "2.0", "id": mid, "result": res}


def main():
    log("starting")
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        try:
            msg = json.loads(line)
        except ValueError:
            out = {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "parse error"}}
        else:
            out = handle(msg)
        if out is not None:
            sys.stdout.write(json.dumps(out) + "\n")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
