#!/bin/sh
# mcpproxy.sh builds TBXark/mcp-proxy (Go, mcp-go) from a checkout and runs
# the gateway hop benchmark with it beside toolhost (issue 26, item 5):
# direct, toolhost serve --stdio (fast path on and off), toolhost's HTTP
# gateway and mcp-proxy (Streamable HTTP), each in front of the same Go
# fixture server over stdio, in one run: interleaved call by call (each
# call meets its way cold) and in runs of 100 calls a way (warm, as
# sequential calls are).
#
#   internal/bench/mcpproxy.sh [CHECKOUT] [COUNT] [CALLS]
#
# CHECKOUT: a TBXark/mcp-proxy source tree (default $MCPPROXY_SRC, else
#   `git clone https://github.com/TBXark/mcp-proxy` into a temporary
#   directory: mcp-proxy is not served by the Go module proxy; its
#   dependencies, mcp-go among them, are).
# COUNT: runs (default 3); CALLS: calls per way per run (default 2000).
# The output is go test's: p50 and p99 per way in µs, and each way's p50
# against direct's; docs/BENCHMARKS.md "The gateway hop, own fast path"
# has the figures and how to read them.
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
src=${1:-${MCPPROXY_SRC:-}}
count=${2:-3}
calls=${3:-2000}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
if [ -z "$src" ]; then
	git clone --depth 1 https://github.com/TBXark/mcp-proxy "$work/src"
	src=$work/src
fi
(cd "$src" && go build -o "$work/mcp-proxy" .)
cd "$root"
uptime
TOOLHOST_BENCH_MCPPROXY=$work/mcp-proxy go test -count="$count" -run '^$' \
	-bench 'GatewayCall/target=fixture/via=(interleaved|interleaved-warm|mcp-proxy|direct|gateway-stdio|gateway-http)$' \
	-benchtime="${calls}x" -timeout 60m ./host/gateway/
uptime
