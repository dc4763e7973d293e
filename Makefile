# toolhost — see README.md. Every target builds what it needs from source.
GO       ?= go
GOFLAGS  ?=
BIN      := bin
PLUGINS  := $(patsubst plugins/%/,%,$(sort $(dir $(wildcard plugins/*/main.go))))
WASMENV  := GOOS=wasip1 GOARCH=wasm
# Keep npx's downloads in one cache so repeated runs start fast.
export npm_config_cache ?= $(HOME)/.npm

.PHONY: all build run test tsclient srt bench bench-peer stress stress-rss stress-serve conformance lint plugins fixtures clean tidy scale-test

all: build plugins

build: $(BIN)/toolhost $(BIN)/mcpfixture $(BIN)/cataloguefixture

$(BIN)/toolhost: FORCE
	$(GO) build -o $@ ./cmd/toolhost

$(BIN)/mcpfixture: FORCE
	$(GO) build -o $@ ./testdata/mcpfixture

# Serves testdata/catalogue/tools.json (tool search, issue 27).
$(BIN)/cataloguefixture: FORCE
	$(GO) build -o $@ ./testdata/cataloguefixture

FORCE:

## plugins: build every first-party plugin plugins/NAME/ to plugins/NAME.wasm
plugins: $(foreach p,$(PLUGINS),plugins/$(p).wasm)

plugins/%.wasm: FORCE
	cd plugins && $(WASMENV) $(GO) build -buildmode=c-shared -o $*.wasm ./$*

## run: the main job on the bundled default configuration (toolhost.toml)
run: build plugins tsclient
	@echo '== toolhost check'
	@./$(BIN)/toolhost check
	@echo; echo '== toolhost tools'
	@./$(BIN)/toolhost tools
	@echo; echo '== toolhost call everything__echo'
	@./$(BIN)/toolhost call everything__echo --args '{"message":"hello from toolhost"}'
	@echo; echo '== toolhost call everything__get-sum'
	@./$(BIN)/toolhost call everything__get-sum --args '{"a":19,"b":23}'
	@echo; echo '== toolhost call fixture__add'
	@./$(BIN)/toolhost call fixture__add --args '{"a":2,"b":40}'
	@echo; echo '== toolhost logs fixture -n 3 (its log file, bin/logs/fixture.log)'
	@./$(BIN)/toolhost logs fixture -n 3
	@echo; echo '== toolhost call jq__jq (a Wasm plugin)'
	@./$(BIN)/toolhost call jq__jq --args '{"filter":"[.[] | select(.stars > 100) | .name]","input":[{"name":"wazero","stars":5000},{"name":"toy","stars":3}]}'
	@echo; echo '== toolhost call fs__list_directory (a Wasm plugin reading its read-only mount)'
	@./$(BIN)/toolhost call fs__list_directory --args '{"path":"/docs"}'
	@echo; echo '== toolhost call fs__read_file /etc/passwd (outside the mounts: a tool error, exit status 1)'
	@./$(BIN)/toolhost call fs__read_file --args '{"path":"/etc/passwd"}'; test $$? -eq 1
	@echo; echo '== toolhost call fetch__fetch to the cloud metadata address (denied by the sandbox: exit status 3)'
	@./$(BIN)/toolhost call fetch__fetch --args '{"url":"http://169.254.169.254/latest/meta-data/"}'; test $$? -eq 3
	@echo; echo '== toolhost call fixture__nope (an unknown tool: exit status 3)'
	@./$(BIN)/toolhost call fixture__nope; test $$? -eq 3
	@echo; echo '== toolhost check --profile review (the read-only role: its catalogue and why each other tool is excluded)'
	@./$(BIN)/toolhost check --profile review
	@echo; echo '== toolhost call --profile review fs__read_file (allowed by the profile)'
	@./$(BIN)/toolhost call --profile review fs__read_file --args '{"path":"/docs/RATIONALE.md"}' | head -3
	@echo; echo '== toolhost call --profile review fs__write_file (denied by the profile: exit status 4, the plugin is not called)'
	@./$(BIN)/toolhost call --profile review fs__write_file --args '{"path":"/docs/x","content":"x"}'; test $$? -eq 4
	@echo; echo '== the last audit records (bin/audit.jsonl)'
	@tail -n 2 $(BIN)/audit.jsonl
	@echo; echo '== toolhost status'
	@./$(BIN)/toolhost status
	@echo; echo '== toolhost serve on loopback, and one call through it by a real MCP client (the TypeScript SDK)'
	@./$(BIN)/toolhost serve --listen 127.0.0.1:0 2>$(BIN)/serve.log & pid=$$!; \
	  for i in $$(seq 1 600); do grep -qs 'serving MCP' $(BIN)/serve.log && break; kill -0 $$pid 2>/dev/null || break; sleep 0.2; done; \
	  url=$$(sed -n 's/.*serving MCP (Streamable HTTP) at \(http[^ ]*\).*/\1/p' $(BIN)/serve.log); echo "serving at $$url"; \
	  CALL=jq__jq ARGS='{"filter":".[0].name","input":[{"name":"through the gateway"}]}' node testdata/tsclient/client.mjs http $$url; rc=$$?; \
	  root=$${url%/mcp}; \
	  echo; echo '== the dashboard and the REST API of that toolhost serve'; \
	  echo "dashboard: $$root/ (live while serve runs; keep one with: ./$(BIN)/toolhost serve --listen 127.0.0.1:8080, then open http://127.0.0.1:8080/)"; \
	  echo "$$ curl -s $$root/api/v1/mcp/invoke -d '{\"server_id\":\"fixture\",\"tool_name\":\"add\",\"params\":{\"a\":2,\"b\":40}}'"; \
	  curl -sS --fail-with-body --max-time 30 -H 'Content-Type: application/json' "$$root/api/v1/mcp/invoke" \
	    -d '{"server_id":"fixture","tool_name":"add","params":{"a":2,"b":40}}' || rc=1; \
	  kill -TERM $$pid; wait $$pid; exit $$rc

## tsclient: the TypeScript SDK client that make run and the gateway tests drive toolhost serve with
tsclient: testdata/tsclient/node_modules/@modelcontextprotocol/sdk/package.json

testdata/tsclient/node_modules/@modelcontextprotocol/sdk/package.json: testdata/tsclient/package-lock.json
	cd testdata/tsclient && npm ci --no-audit --no-fund

## srt: Anthropic's sandbox-runtime (testdata/srt, pinned), which a Linux transport test wraps a stdio server
## in; skipped without npm or flock. flock: one npm ci at a time (it empties node_modules first), shared
## with the test's own install.
SRT_CLI := testdata/srt/node_modules/@anthropic-ai/sandbox-runtime/dist/cli.js
srt:
	@if command -v npm >/dev/null && command -v flock >/dev/null; then \
	  flock testdata/srt/package-lock.json sh -c 'test -f $(SRT_CLI) || (cd testdata/srt && npm ci --no-audit --no-fund)'; \
	else echo "srt: npm or flock not found: not installing testdata/srt"; fi

## test: everything, with the race detector; builds what the tests need
# Every benchmark also runs once (-benchtime=1x) so that a broken one fails here.
# The tests that run npm packages (server-everything, the Inspector, tsclient,
# srt) run only with TOOLHOST_NPM_TESTS=1 (testutil.NeedNPM), set here after
# the npm packages are fetched; a plain `go test ./...` skips them.
test: build plugins srt
	@if command -v npm >/dev/null; then $(MAKE) --no-print-directory tsclient; else echo "tsclient: npm not found: not installing testdata/tsclient"; fi
	$(GO) vet ./...
	TOOLHOST_NPM_TESTS=1 $(GO) test -race -count=1 -timeout 20m -bench . -benchtime=1x ./...
	cd pdk && $(GO) vet ./... && $(GO) test -count=1 ./...
	@# plugins/README.md: every first-party plugin's tools, through pdktest.
	cd plugins && $(GO) test -count=1 ./...
	@# The load test's short form: 8s, a backend killed every 2s.
	$(GO) test -race -count=1 -v -run '^TestStress$$' ./host -stress 8s -stress-kill 2s > $(BIN)/stress.out 2>&1; \
	  rc=$$?; grep -E '^(stress:|--- |\s+stress_test|ok|FAIL)' $(BIN)/stress.out; exit $$rc
	@# The MCP conformance suite: server scenarios through toolhost serve (sessions 5 times in a row, each equal to direct), client scenarios through the host API (about 40s).
	GO=$(GO) testdata/conformance/run.sh
	@# The gateway's load test's short form: 50 HTTP clients for 8s, a backend killed every 2s.
	$(GO) test -race -count=1 -v -run '^TestStressServe$$' ./host/gateway -stress 8s -stress-kill 2s > $(BIN)/stress-serve.out 2>&1; \
	  rc=$$?; grep -E '^(stress-serve:|--- |\s+stress_test|ok|FAIL)' $(BIN)/stress-serve.out; exit $$rc

## stress: 50 callers for 60s over Wasm and stdio tools, one backend killed
## every 10s (under -race); stress-rss: the same without -race, which also
## checks that resident memory grows by less than 10%.
stress: build plugins
	$(GO) test -race -count=1 -v -timeout 10m -run '^TestStress$$' ./host -stress 60s -stress-kill 10s > $(BIN)/stress.out 2>&1; \
	  rc=$$?; grep -E '^(stress:|--- |\s+stress_test|ok|FAIL)' $(BIN)/stress.out; exit $$rc

stress-rss: build plugins
	$(GO) test -count=1 -v -timeout 10m -run '^TestStress$$' ./host -stress 60s -stress-kill 10s > $(BIN)/stress.out 2>&1; \
	  rc=$$?; grep -E '^(stress:|--- |\s+stress_test|ok|FAIL)' $(BIN)/stress.out; exit $$rc

## conformance: the official MCP conformance suite's server scenarios (pinned)
## against toolhost serve fronting the go-sdk everything-server, and against
## that server directly, in sessions and stateless; prints the four totals;
## then its client scenarios against toolhost's conformance client
## (testdata/conformance/client) and the go-sdk's example client: two totals.
## Installs Node 22 under bin/node22 when node is older.
conformance:
	GO=$(GO) testdata/conformance/run.sh

## stress-serve: 50 go-sdk HTTP clients for 60s through an in-process gateway
## over Wasm and stdio tools, one backend killed every 10s; without -race, so
## that it also checks that resident memory grows by less than 10% (make test
## runs a short form under -race).
stress-serve: build plugins
	$(GO) test -count=1 -v -timeout 10m -run '^TestStressServe$$' ./host/gateway -stress 60s -stress-kill 10s > $(BIN)/stress-serve.out 2>&1; \
	  rc=$$?; grep -E '^(stress-serve:|--- |\s+stress_test|ok|FAIL)' $(BIN)/stress-serve.out; exit $$rc

## scale-test: issue 25's scale-out run (internal/scaletest): 3 toolhost serve
## replicas (stateless) and 2 with sessions sharing a private PostgreSQL, behind
## HAProxy on loopback; 50 go-sdk clients and 4 session clients for 60s, one
## replica killed (SIGKILL) every 10s and restarted; prints the figures and
## fails when one is off (about 90s). Installs haproxy and postgresql from
## Debian when missing (apt-get: as root, else with sudo). SCALEFLAGS passes
## flags to internal/scaletest, e.g. SCALEFLAGS="-duration 20s -kill 5s".
SCALEFLAGS ?=
scale-test: build plugins/time.wasm
	@missing=; command -v haproxy >/dev/null || test -x /usr/sbin/haproxy || missing="$$missing haproxy"; \
	  ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1 || missing="$$missing postgresql"; \
	  if [ -n "$$missing" ]; then \
	    sudo=; [ "$$(id -u)" -eq 0 ] || sudo=sudo; \
	    echo "scale-test: installing$$missing from Debian"; \
	    $$sudo apt-get update && $$sudo apt-get install -y $$missing || exit 1; \
	  fi
	$(GO) run ./internal/scaletest $(SCALEFLAGS)

## bench: benchmarks side by side in one run (medians over -count runs), then
## each comparison as a benchstat table: every column against the first.
BENCHSTAT := $(GO) run golang.org/x/perf/cmd/benchstat@v0.0.0-20260908200009-22c9c6c9d4da
bench: build plugins
	TOOLHOST_NPM_TESTS=1 $(GO) test -run '^$$' -bench . -benchmem -count 6 -timeout 30m ./... | tee bench.out
	@for k in via impl instances checks cache sandbox; do \
	  echo; echo "== ratios by /$$k"; \
	  $(BENCHSTAT) -filter "/$$k:/.+/" -col /$$k -row .name,/server,/kind bench.out || exit 1; \
	done

## bench-peer: the gateway hop against TBXark/mcp-proxy, built from
## MCPPROXY_SRC (a checkout; cloned when unset), in one interleaved run
## (issue 26; internal/bench/mcpproxy.sh).
bench-peer: build
	internal/bench/mcpproxy.sh "$(MCPPROXY_SRC)"

lint:
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); exit 1; }
	$(GO) vet ./...
	cd pdk && $(GO) vet ./...
	$(GO) mod tidy -diff
	$(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2 ./...

clean:
	rm -rf $(BIN) plugins/*.wasm testdata/plugins/*.wasm bench.out
