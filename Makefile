# ccbench: two targets.
#   make example   build and install ccbench, then run scenarios/example.toml
#   make test      install ccbench in editable mode with test extras, run cargo test and pytest (tests/suite.py)
#   make agent     the VM guest's statically linked traffic agent (every install builds it)
#   make style     the format and lint checks: rustfmt, clippy, ruff (make test runs them)
# Both are idempotent; Cargo's build cache in target/ keeps repeat runs fast.

PYTHON ?= python3
PIP := $(PYTHON) -m pip install --disable-pip-version-check --no-input --progress-bar off --root-user-action=ignore
# Where pip puts console scripts for this interpreter (pyenv shims may lag behind).
SCRIPTS := $(shell $(PYTHON) -c 'import sysconfig; print(sysconfig.get_path("scripts"))')

# The kernel engine's tests (run as root) need iproute2's `ip`; install it only if missing.
KERNEL_TEST_PACKAGES := iproute2
# The HTML report's test opens the page in headless Chromium through chromedriver.
REPORT_TEST_PACKAGES := chromium chromium-driver
# The capture tests read pcap files with tshark and import real iperf3 reports.
CAPTURE_TEST_PACKAGES := tshark iperf3
# The conformance tests build packetdrill (bison, flex) and run its scripts, two of which
# switch offloads off with ethtool.
CONFORMANCE_TEST_PACKAGES := bison flex ethtool
# The VM guest's tests boot a Debian kernel (downloaded on first use) in QEMU from an
# initramfs built around static busybox: qemu-system-x86 and busybox-static. The patched
# BBR module is built against the guest kernel's Debian headers (downloaded with it):
# gcc-12 (the guest kernel's compiler), make, patch and binutils. Configuring a guest
# kernel of one's own (ccbench vm build-kernel) also needs flex, bison, bc, libelf-dev
# and libssl-dev.
VM_BUILD_PACKAGES := gcc-12 make patch binutils flex bison bc libelf-dev libssl-dev
# The BPF tests compile congestion controls written in C (bpf:PATH.c) with clang's BPF
# target against libbpf's headers (libbpf-dev), read the objects with llvm's tools, and
# register them in this kernel with bpftool.
BPF_TEST_PACKAGES := clang llvm libbpf-dev bpftool

.PHONY: example test style agent kernel-test-deps report-test-deps capture-test-deps vm-test-deps \
	conformance-test-deps bpf-test-deps

example:
	$(PIP) .
	$(SCRIPTS)/ccbench run scenarios/example.toml

test: kernel-test-deps report-test-deps capture-test-deps vm-test-deps conformance-test-deps bpf-test-deps
	$(PIP) -e '.[test]'
	$(MAKE) style
	$(PYTHON) tests/suite.py

# One style: rustfmt.toml and clippy for the crates (every allowed lint is an #[allow] with
# its reason beside it), [tool.ruff] in pyproject.toml for Python's lint and format. In CI
# (CI set, as .ci/run sets it) a missing rustfmt or clippy fails the check.
style:
	@for tool in rustfmt clippy; do if ! cargo $${tool#rust} --version >/dev/null 2>&1; then \
		if [ -n "$$CI" ]; then echo "$$tool is not installed (rustup component add $$tool)"; exit 1; fi; \
		echo "$$tool is not installed (rustup component add $$tool); its check is skipped"; fi; done
	@if cargo fmt --version >/dev/null 2>&1; then cargo fmt --all --check; fi
	@if cargo clippy --version >/dev/null 2>&1; then cargo clippy --workspace --all-targets --quiet -- -D warnings; fi
	$(PYTHON) -m ruff check python tests benches install
	$(PYTHON) -m ruff format --check --quiet python tests benches install

# What pip's install runs (install/build_backend.py), for a rebuild after changing the agent.
agent:
	$(PYTHON) install/static_agent.py

kernel-test-deps:
	@if [ "$$(id -u)" = 0 ] && ! command -v ip >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1; then \
		echo "installing $(KERNEL_TEST_PACKAGES) for the kernel engine's tests"; \
		DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null && \
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $(KERNEL_TEST_PACKAGES) >/dev/null; \
	fi

report-test-deps:
	@if [ "$$(id -u)" = 0 ] && ! { command -v chromium >/dev/null 2>&1 && command -v chromedriver >/dev/null 2>&1; } \
		&& command -v apt-get >/dev/null 2>&1; then \
		echo "installing $(REPORT_TEST_PACKAGES) for the HTML report's browser test"; \
		{ DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null && \
		  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $(REPORT_TEST_PACKAGES) >/dev/null; } \
		|| echo "could not install $(REPORT_TEST_PACKAGES); the browser test will be skipped"; \
	fi

# Only as root, only what is missing. wireshark-common asks whether non-root users may
# capture; answer no beforehand so that the install never waits for input.
capture-test-deps:
	@missing=""; for cmd in $(CAPTURE_TEST_PACKAGES); do command -v $$cmd >/dev/null 2>&1 || missing="$$missing $$cmd"; done; \
	if [ "$$(id -u)" = 0 ] && [ -n "$$missing" ] && command -v apt-get >/dev/null 2>&1; then \
		echo "installing$$missing for the capture tests"; \
		echo "wireshark-common wireshark-common/install-setuid boolean false" | debconf-set-selections; \
		DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null && \
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
	fi

vm-test-deps:
	@missing=""; command -v qemu-system-x86_64 >/dev/null 2>&1 || missing="$$missing qemu-system-x86"; \
	dpkg-query -W -f='$${Status}' busybox-static 2>/dev/null | grep -q "ok installed" || missing="$$missing busybox-static"; \
	for pkg in $(VM_BUILD_PACKAGES); do dpkg-query -W -f='$${Status}' $$pkg 2>/dev/null | grep -q "ok installed" \
		|| missing="$$missing $$pkg"; done; \
	if [ "$$(id -u)" = 0 ] && [ -n "$$missing" ] && command -v apt-get >/dev/null 2>&1; then \
		echo "installing$$missing for the VM guest's tests"; \
		{ DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null && \
		  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing >/dev/null; } \
		|| echo "could not install$$missing; the VM tests will be skipped"; \
	fi

conformance-test-deps:
	@PATH="$$PATH:/usr/sbin:/sbin"; missing=""; for cmd in $(CONFORMANCE_TEST_PACKAGES); do command -v $$cmd >/dev/null 2>&1 || missing="$$missing $$cmd"; done; \
	if [ "$$(id -u)" = 0 ] && [ -n "$$missing" ] && command -v apt-get >/dev/null 2>&1; then \
		echo "installing$$missing for the conformance tests (packetdrill's build and scripts)"; \
		{ DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null && \
		  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing >/dev/null; } \
		|| echo "could not install$$missing; the conformance tests that need them will be skipped"; \
	fi

bpf-test-deps:
	@missing=""; for pkg in $(BPF_TEST_PACKAGES); do dpkg-query -W -f='$${Status}' $$pkg 2>/dev/null | grep -q "ok installed" \
		|| missing="$$missing $$pkg"; done; \
	if [ "$$(id -u)" = 0 ] && [ -n "$$missing" ] && command -v apt-get >/dev/null 2>&1; then \
		echo "installing$$missing for the BPF tests"; \
		{ DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null && \
		  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing >/dev/null; } \
		|| echo "could not install$$missing; the BPF tests that need them will be skipped (and fail where CI is set)"; \
	fi
