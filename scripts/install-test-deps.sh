#!/bin/bash
# Install what the tests need: tshark, iproute2 (ip), bpftrace (tests/audit.rs), ping and ethtool (the live
# testbed), groff and systemd-analyze (tests/install.rs), g++ (scripts/fuzz.sh), scapy, pytest, grpcio and
# grpcio-tools (the IOAM collector of tests/kernel/test_ioam_export.py), prometheus-client (its
# OpenMetrics parser reads the live router's metrics), clang-19 (crates/xdp builds its XDP program
# with it: the pinned BPF compiler, docs/xdp.md).
# Idempotent and quick when everything is already present. Run as root.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
PY=${PYTHON:-python3}

need_apt=()
command -v tshark >/dev/null 2>&1 || need_apt+=(tshark)
command -v ip >/dev/null 2>&1 || need_apt+=(iproute2)
# Installed here, before the tests run in parallel: lwt6 audit would otherwise install it from two tests at once.
command -v bpftrace >/dev/null 2>&1 || need_apt+=(bpftrace)
# tests/install.rs renders the man pages and verifies the systemd unit with the tools that consume them.
command -v groff >/dev/null 2>&1 || need_apt+=(groff-base)
command -v systemd-analyze >/dev/null 2>&1 || need_apt+=(systemd)
command -v systemd-sysusers >/dev/null 2>&1 || need_apt+=(systemd)
# tests/kernel/test_systemd.py runs lwt6 as an unprivileged user with chosen capabilities (setpriv).
command -v setpriv >/dev/null 2>&1 || need_apt+=(util-linux)
# ... and checks with strace that it calls only what the unit's SystemCallFilter= allows.
command -v strace >/dev/null 2>&1 || need_apt+=(strace)
# scripts/fuzz.sh: libfuzzer-sys compiles libFuzzer's C++ sources with the system C++ compiler.
command -v c++ >/dev/null 2>&1 || need_apt+=(g++)
# scripts/test.sh strips the installed binary's debug info (docs/install.md).
command -v strip >/dev/null 2>&1 || need_apt+=(binutils)
# The live router's testbed (tests/kernel/test_live.py): ping through lwt6, checksum offload off on the hosts.
command -v ping >/dev/null 2>&1 || need_apt+=(iputils-ping)
command -v ethtool >/dev/null 2>&1 || need_apt+=(ethtool)
# The XDP tier's BPF program (crates/xdp/build.rs) is compiled with clang 19, pinned: Debian's default clang 14
# silently dropped header stores in such a program. Without it lwt6 builds without the tier.
command -v clang-19 >/dev/null 2>&1 || need_apt+=(clang-19)
# crates/export/tests/tls.rs makes its CA and server certificate with the openssl command.
command -v openssl >/dev/null 2>&1 || need_apt+=(openssl)
if ((${#need_apt[@]})); then
    # tshark asks whether non-root users may capture; answer "no" without a prompt.
    echo "wireshark-common wireshark-common/install-setuid boolean false" | debconf-set-selections
    apt-get update -q
    apt-get install -y -q --no-install-recommends "${need_apt[@]}"
fi

need_pip=()
"$PY" -c 'import scapy' 2>/dev/null || need_pip+=(scapy)
"$PY" -c 'import pytest' 2>/dev/null || need_pip+=(pytest)
"$PY" -c 'import grpc' 2>/dev/null || need_pip+=(grpcio)
"$PY" -c 'import grpc_tools' 2>/dev/null || need_pip+=(grpcio-tools)
# tests/kernel/test_live.py::test_metrics parses the scrape with the reference client's OpenMetrics parser.
"$PY" -c 'import prometheus_client' 2>/dev/null || need_pip+=(prometheus-client)
# tests/kernel/test_ioam_export_live.py decodes the live OTLP export with the upstream OpenTelemetry definitions.
"$PY" -c 'import opentelemetry.proto' 2>/dev/null || need_pip+=(opentelemetry-proto)
if ((${#need_pip[@]})); then
    # A Debian system Python refuses pip outside a virtual environment (PEP 668); the test machine's own packages
    # are what the tests need, so install there anyway.
    "$PY" -m pip install -q "${need_pip[@]}" || "$PY" -m pip install -q --break-system-packages "${need_pip[@]}"
fi

# bpftrace reads tracepoint formats from tracefs; a fresh machine may not have it mounted. Mount it once here,
# before tests that need it run in parallel (lwt6 audit also mounts it, and tolerates a concurrent mount).
if [ ! -e /sys/kernel/tracing/events ]; then
    mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null || [ -e /sys/kernel/tracing/events ] ||
        echo "install-test-deps: could not mount tracefs on /sys/kernel/tracing (lwt6 audit will try again)" >&2
fi

echo "test deps OK: $(tshark --version 2>/dev/null | head -1); $(ip -V); $(bpftrace --version); $(clang-19 --version | head -1); scapy $("$PY" -c 'import scapy; print(scapy.__version__)')"
