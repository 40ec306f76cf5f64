# ovsdp — see README.md. Every target works on a fresh Debian machine as root;
# `make test` installs what it needs first (scripts/setup.sh).

GO      ?= go
BIN     := $(CURDIR)/bin
VMRUN   := $(BIN)/vmrun
PKGS    := ./...
# Kernel tests run in a QEMU guest with Debian's kernel when the host has no
# openvswitch module (see testenv/README.md); vmrun runs them directly when
# the host has it.
KTEST_TIMEOUT ?= 40m
# Flows of cmd/dpctl's bulk test (add-flows, dump-flows | wc -l, del-flows).
DPCTL_BULK ?= 100000

# The binaries' version and commit (dpctl --version, upcalld --version,
# upcalld_build_info), from git; set VERSION= to override.
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo unknown)
COMMIT  ?= $(shell c=$$(git rev-parse HEAD 2>/dev/null) && { git diff --quiet HEAD 2>/dev/null && echo $$c || echo $$c-dirty; })
BUILDINFO := github.com/ovsdp/ovsdp/internal/buildinfo
LDFLAGS := -X $(BUILDINFO).version=$(VERSION) -X $(BUILDINFO).commit=$(COMMIT)
GOBUILD := $(GO) build -ldflags "$(LDFLAGS)"

# make install: where things go ($(DESTDIR) is prepended to every path).
PREFIX         ?= /usr/local
BINDIR         ?= $(PREFIX)/bin
MANDIR         ?= $(PREFIX)/share/man
BASHCOMPDIR    ?= $(PREFIX)/share/bash-completion/completions
ZSHCOMPDIR     ?= $(PREFIX)/share/zsh/site-functions
SYSTEMDUNITDIR ?= $(PREFIX)/lib/systemd/system
SYSCONFDIR     ?= /etc
INSTALL        ?= install

.PHONY: all build setup test unit race ktest crosscheck lint fuzz bench demo demo-kernel docs clean install uninstall install-test deb deb-test

all: build

build:
	$(GO) build ./...
	$(GOBUILD) -o $(BIN)/ ./cmd/...
	@if [ -d testenv/vmrun ]; then $(GO) build -o $(VMRUN) ./testenv/vmrun; fi

# Installs the packages and the kernel image the tests need (idempotent).
setup:
	bash scripts/setup.sh

# Everything: formatting and vet, unit and namespace tests (as root on the
# host), then the kernel tests (in the VM here).
test: setup lint build unit race install-test deb-test ktest

unit:
	$(GO) test -count=1 $(PKGS)
	$(GO) test -count=1 -tags genl_stub ./genl

# The concurrent packages' unit and namespace tests again under the race
# detector: the lock-free flow table and the port workers (userdp), the
# control server (userdp/ctl), the learning switch (policy), the
# handlers and the revalidator (upcalld's daemon), the upcall sockets
# (genl). Bounded by RACE_TIMEOUT per package.
RACE_PKGS    ?= ./userdp/... ./policy/... ./cmd/upcalld/internal/daemon/... ./genl/...
RACE_TIMEOUT ?= 15m
race:
	$(GO) test -count=1 -race -timeout $(RACE_TIMEOUT) $(RACE_PKGS)

# One VM at a time (-p 1): two TCG guests on two cores slow each other
# down enough to disturb timing-sensitive kernel tests.
ktest: build
	DPCTL_BULK=$(DPCTL_BULK) $(GO) test -count=1 -p 1 -tags integration -timeout $(KTEST_TIMEOUT) -exec "$(VMRUN) -timeout $(KTEST_TIMEOUT)" -run '^TestIntegration' $(PKGS)

# The cross-check suite alone (it is part of ktest, hence of test): the same
# scenarios through the kernel datapath and the userspace one, compared.
crosscheck: build
	$(GO) test -count=1 -v -tags integration -timeout $(KTEST_TIMEOUT) -exec "$(VMRUN) -timeout $(KTEST_TIMEOUT)" -run '^TestIntegration' ./crosscheck/

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)
	$(GO) vet -tags integration $(PKGS)
	GOOS=darwin $(GO) build $(PKGS)
	GOOS=darwin $(GO) vet $(PKGS)
	$(GO) vet -tags genl_stub ./genl

# A short run of every fuzz target (FUZZTIME per target), all of them even
# when some fail, then a summary table (scripts/fuzz.sh; logs in
# .cache/fuzz/). FUZZ_PARALLEL sets go test -parallel (default: Go's,
# GOMAXPROCS); FUZZ_MINIMIZETIME, FUZZ_STALL and FUZZ_TARGETS are described
# in the script.
FUZZTIME ?= 10s
FUZZ_PARALLEL ?=
fuzz:
	GO=$(GO) FUZZ_PARALLEL=$(FUZZ_PARALLEL) bash scripts/fuzz.sh $(FUZZTIME)

# Every benchmark with its baseline measured in the same run, medians of
# COUNT runs with their confidence intervals (6 runs: the fewest that give
# a 95% interval), written to bench/REPORT.md with charts (about 11 minutes
# with COUNT=3, a few more with 6; BENCH_LARGE=1 adds the 100,000-flow
# dpctl run in the VM).
BENCHTIME ?= 200ms
COUNT     ?= 6
bench: build
	BENCHTIME=$(BENCHTIME) COUNT=$(COUNT) bash scripts/bench.sh

demo: build
	bash scripts/demo.sh

# The demo's kernel half, in the VM when the host has no openvswitch module.
# (several minutes under TCG).
demo-kernel: setup build
	$(VMRUN) -timeout 20m /bin/bash $(CURDIR)/scripts/demo.sh --kernel

# The dpctl man page and shell completions, generated from its commands.
docs:
	$(GO) run ./cmd/dpctl gen-man > docs/dpctl.8
	$(GO) run ./cmd/dpctl completion bash > docs/dpctl.bash
	$(GO) run ./cmd/dpctl completion zsh > docs/_dpctl

# The tools, their man page and shell completions, the systemd unit
# (upcalld@.service, ExecStart at $(BINDIR)/upcalld) and, unless they
# exist, the default configuration under $(SYSCONFDIR)/ovsdp.
install: build
	$(INSTALL) -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(MANDIR)/man8 $(DESTDIR)$(BASHCOMPDIR) $(DESTDIR)$(ZSHCOMPDIR) $(DESTDIR)$(SYSTEMDUNITDIR) $(DESTDIR)$(SYSCONFDIR)/ovsdp
	$(INSTALL) -m 755 $(BIN)/dpctl $(BIN)/upcalld $(DESTDIR)$(BINDIR)/
	$(INSTALL) -m 644 docs/dpctl.8 $(DESTDIR)$(MANDIR)/man8/dpctl.8
	$(INSTALL) -m 644 docs/dpctl.bash $(DESTDIR)$(BASHCOMPDIR)/dpctl
	$(INSTALL) -m 644 docs/_dpctl $(DESTDIR)$(ZSHCOMPDIR)/_dpctl
	sed -e 's|@BINDIR@|$(BINDIR)|g' -e 's|@SYSCONFDIR@|$(SYSCONFDIR)|g' contrib/systemd/upcalld@.service > $(DESTDIR)$(SYSTEMDUNITDIR)/upcalld@.service
	chmod 644 $(DESTDIR)$(SYSTEMDUNITDIR)/upcalld@.service
	for f in upcalld.conf default.rules; do \
		if [ -e $(DESTDIR)$(SYSCONFDIR)/ovsdp/$$f ]; then echo "install: keeping $(DESTDIR)$(SYSCONFDIR)/ovsdp/$$f"; \
		else sed 's|/etc/ovsdp|$(SYSCONFDIR)/ovsdp|g' contrib/etc/$$f > $(DESTDIR)$(SYSCONFDIR)/ovsdp/$$f && chmod 644 $(DESTDIR)$(SYSCONFDIR)/ovsdp/$$f; fi; \
	done
	@if [ -z "$(DESTDIR)" ] && command -v systemctl >/dev/null 2>&1 && [ -d /run/systemd/system ]; then systemctl daemon-reload; fi

# Removes what install put there; the configuration only when unchanged.
uninstall:
	rm -f $(DESTDIR)$(BINDIR)/dpctl $(DESTDIR)$(BINDIR)/upcalld $(DESTDIR)$(MANDIR)/man8/dpctl.8 \
		$(DESTDIR)$(BASHCOMPDIR)/dpctl $(DESTDIR)$(ZSHCOMPDIR)/_dpctl $(DESTDIR)$(SYSTEMDUNITDIR)/upcalld@.service
	for f in upcalld.conf default.rules; do \
		p=$(DESTDIR)$(SYSCONFDIR)/ovsdp/$$f; [ -e $$p ] || continue; \
		if sed 's|/etc/ovsdp|$(SYSCONFDIR)/ovsdp|g' contrib/etc/$$f | cmp -s - $$p; then rm -f $$p; else echo "uninstall: keeping the changed $$p"; fi; \
	done
	rmdir $(DESTDIR)$(SYSCONFDIR)/ovsdp 2>/dev/null || true
	@if [ -z "$(DESTDIR)" ] && command -v systemctl >/dev/null 2>&1 && [ -d /run/systemd/system ]; then systemctl daemon-reload; fi

# make install into a temporary DESTDIR, the installed tools run, the man
# page and completions checked where man, bash-completion and zsh look,
# then make uninstall, which must leave nothing.
install-test: build
	bash scripts/install-test.sh

# A Debian package of the tools (bin/ovsdp_VERSION_ARCH.deb), with dpkg-deb.
deb:
	bash scripts/deb.sh

# make deb, then dpkg -i in the VM, upcalld@NAME's ExecStart serving a
# kernel datapath, dpkg -r and --purge (scripts/deb-test.sh).
deb-test: build
	bash scripts/deb-test.sh

clean:
	rm -rf $(BIN)
