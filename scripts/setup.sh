#!/usr/bin/env bash
# Set up everything acidctl needs in this checkout, from nothing:
#   scripts/setup.sh          .venv with acidctl and its runtime extras; Java 17 for Spark
#   scripts/setup.sh --test   the same plus test tools and the PostgreSQL/MariaDB server packages
# Idempotent: a second run only checks. Installs system packages with apt-get (root or sudo).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

mode=${1:-}
PY=${PYTHON:-python3}
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"

java_ok() {
    command -v java >/dev/null 2>&1 &&
    java -version 2>&1 | head -n1 | grep -qE 'version "(1[7-9]|2[0-9])'
}

if ! java_ok; then
    echo "setup: installing Java 17 (needed by Spark)"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq openjdk-17-jre-headless >/dev/null
fi

if [ ! -x .venv/bin/python ]; then
    echo "setup: creating .venv"
    "$PY" -m venv .venv
fi
# One stamp for both modes: it records which extras are installed ("all", or "dev", which
# includes "all"), so `make demo` after `make test` (or a second `make demo`) installs nothing,
# and only a plain setup followed by --test (or a newer pyproject.toml) reinstalls.
stamp=".venv/.acidctl-setup"
want=all
[ "$mode" = "--test" ] && want=dev
have=$(cat "$stamp" 2>/dev/null || true)
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ] || { [ "$want" = dev ] && [ "$have" != dev ]; }; then
    [ "$want" = all ] && [ "$have" = dev ] && want=dev  # pyproject.toml changed: keep the test tools
    if [ "$want" = dev ]; then
        # dev includes the kerberos extra: pip builds gssapi, krb5 and pykerberos from source
        # (no Linux wheels), which needs krb5-config (libkrb5-dev), a C compiler and Python.h
        kpkgs=()
        command -v krb5-config >/dev/null 2>&1 || kpkgs+=(libkrb5-dev)
        command -v gcc >/dev/null 2>&1 || kpkgs+=(gcc)
        .venv/bin/python -c 'import os, sysconfig, sys; sys.exit(not os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")))' ||
            kpkgs+=(python3-dev)
        if [ ${#kpkgs[@]} -gt 0 ]; then
            echo "setup: installing ${kpkgs[*]} (to build the kerberos extra)"
            $SUDO apt-get update -qq
            DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${kpkgs[@]}" >/dev/null
        fi
    fi
    echo "setup: installing Python packages (.[$want])"
    .venv/bin/python -m pip install -q --upgrade pip >/dev/null
    # setuptools >= 80 prints a boxed "Editable installation" notice from the build backend on
    # every editable install (a warning a user can do nothing about); pip passes the variable on
    PYTHONWARNINGS="ignore:Editable installation" .venv/bin/python -m pip install -q -e ".[$want]"
    echo "$want" > "$stamp"
fi

if [ "$mode" = "--test" ]; then
    bash scripts/install-test-servers.sh
fi
echo "setup: ready (.venv/bin/acidctl)"
