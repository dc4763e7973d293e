# toolhost — see README.md. Every target builds what it needs from source.
GO       ?= go
GOFLAGS  ?=
BIN      := bin
PLUGINS  := $(patsubst plugins/%/,%,$(sort $(dir $(wildcard plugins/*/main.go))))
WASMENV  := GOOS=wasip1 GOARCH=wasm
# Keep npx's downloads in one cache so repeated runs start fast.
export npm_config_cache ?= $(HOME)/.npm

.PHONY: all build run test bench stress stress-rss lint plugins fixtures clean tidy

all: build plugins

build: $(BIN)/toolhost $(BIN)/mcpfixture

$(BIN)/toolhost: FORCE
	$(GO) build -o $@ ./cmd/toolhost

$(BIN)/mcpfixture: FORCE
	$(GO) build -o $@ ./testdata/mcpfixture

FORCE:

## plugins: build every first-party plugin plugins/NAME/ to plugins/NAME.wasm
plugins: $(foreach p,$(PLUGINS),plugins/$(p).wasm)

plugins/%.wasm: FORCE
	cd plugins && $(WASMENV) $(GO) build -buildmode=c-shared -o $*.wasm ./$*

## run: the main job on the bundled default configuration (toolhost.toml)
run: build plugins
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

## test: everything, with the race detector; builds what the tests need
test: build plugins
	$(GO) vet ./...
	$(GO) test -race -count=1 -timeout 20m ./...
	cd pdk && $(GO) vet ./... && $(GO) test -count=1 ./...
	@# plugins/README.md: every first-party plugin's tools, through pdktest.
	cd plugins && $(GO) test -count=1 ./...
	@# The load test's short form: 8s, a backend killed every 2s.
	$(GO) test -race -count=1 -v -run '^TestStress$$' ./host -stress 8s -stress-kill 2s > $(BIN)/stress.out 2>&1; \
	  rc=$$?; grep -E '^(stress:|--- |\s+stress_test|ok|FAIL)' $(BIN)/stress.out; exit $$rc

## stress: 50 callers for 60s over Wasm and stdio tools, one backend killed
## every 10s (under -race); stress-rss: the same without -race, which also
## checks that resident memory grows by less than 10%.
stress: build plugins
	$(GO) test -race -count=1 -v -timeout 10m -run '^TestStress$$' ./host -stress 60s -stress-kill 10s > $(BIN)/stress.out 2>&1; \
	  rc=$$?; grep -E '^(stress:|--- |\s+stress_test|ok|FAIL)' $(BIN)/stress.out; exit $$rc

stress-rss: build plugins
	$(GO) test -count=1 -v -timeout 10m -run '^TestStress$$' ./host -stress 60s -stress-kill 10s > $(BIN)/stress.out 2>&1; \
	  rc=$$?; grep -E '^(stress:|--- |\s+stress_test|ok|FAIL)' $(BIN)/stress.out; exit $$rc

## bench: benchmarks side by side in one run (medians over -count runs)
bench: build plugins
	$(GO) test -run '^$$' -bench . -benchmem -count 5 -timeout 30m ./... | tee bench.out

lint:
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); exit 1; }
	$(GO) vet ./...
	cd pdk && $(GO) vet ./...
	$(GO) mod tidy -diff
	$(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2 ./...

clean:
	rm -rf $(BIN) plugins/*.wasm testdata/plugins/*.wasm bench.out
