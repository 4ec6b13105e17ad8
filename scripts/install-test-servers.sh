#!/usr/bin/env bash
# Install the PostgreSQL and MariaDB server binaries used by tests/metastore, the headless
# Chromium that tests/doctor/test_html.py renders the HTML report in, the zsh and fish shells
# tests/cli/test_completions.py runs the completion scripts in, and for the Kerberos tests
# (tests/kerberos, tests/metastore/test_gssapi.py) MIT Kerberos' KDC and tools (krb5-kdc,
# krb5-admin-server, krb5-user) and apache2 with mod_auth_gssapi (SPNEGO in front of the
# WebHDFS test server), and the PostgreSQL JDBC driver (libpostgresql-jdbc-java) of the Hive 2.3
# metastore on PostgreSQL (tests/hive23/pgserver.py) (Debian/Ubuntu).
#
# Idempotent: does nothing when both are present; runs `apt-get update` only if something is
# missing. System services are NOT started: the tests start their own throw-away servers on
# loopback (tests/metastore/conftest.py). A temporary policy-rc.d (exit 101) keeps dpkg from
# starting daemons, and RUNLEVEL=1 covers scripts that ignore it.
set -euo pipefail

have_pg() {
    compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null && compgen -G "/usr/lib/postgresql/*/bin/postgres" >/dev/null
}
have_chromium() {
    command -v chromium >/dev/null || command -v chromium-browser >/dev/null
}
have_mariadb() {
    { command -v mariadbd >/dev/null || [ -x /usr/sbin/mariadbd ] || [ -x /usr/sbin/mysqld ]; } &&
    { command -v mariadb-install-db >/dev/null || command -v mysql_install_db >/dev/null; }
}

pkgs=()
have_pg || pkgs+=(postgresql)
have_mariadb || pkgs+=(mariadb-server)
have_chromium || pkgs+=(chromium)
command -v zsh >/dev/null || pkgs+=(zsh)
command -v fish >/dev/null || pkgs+=(fish)
have_kdc() {
    for b in krb5kdc kdb5_util kadmin.local; do
        command -v "$b" >/dev/null || [ -x "/usr/sbin/$b" ] || return 1
    done
    command -v kinit >/dev/null && command -v klist >/dev/null
}
have_apache_gssapi() {
    { command -v apache2 >/dev/null || [ -x /usr/sbin/apache2 ]; } && [ -f /usr/lib/apache2/modules/mod_auth_gssapi.so ]
}
have_kdc || pkgs+=(krb5-kdc krb5-admin-server krb5-user)
have_apache_gssapi || pkgs+=(apache2 libapache2-mod-auth-gssapi)
# the PostgreSQL JDBC driver of the Hive 2.3 metastore on PostgreSQL (tests/hive23/pgserver.py)
have_pg_jdbc() { [ -f /usr/share/java/postgresql.jar ]; }
have_pg_jdbc || pkgs+=(libpostgresql-jdbc-java)

if [ ${#pkgs[@]} -eq 0 ]; then
    echo "install-test-servers: postgresql, mariadb-server, chromium, zsh, fish, krb5-kdc, apache2 (mod_auth_gssapi) and libpostgresql-jdbc-java already installed"
    exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
    SUDO="sudo"
fi

policy=/usr/sbin/policy-rc.d
created_policy=0
if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\nexit 101\n' | $SUDO tee "$policy" >/dev/null
    $SUDO chmod 755 "$policy"
    created_policy=1
fi
cleanup() { if [ "$created_policy" = 1 ]; then $SUDO rm -f "$policy"; fi; }
trap cleanup EXIT

echo "install-test-servers: installing ${pkgs[*]}"
export DEBIAN_FRONTEND=noninteractive RUNLEVEL=1
$SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -qq
$SUDO env DEBIAN_FRONTEND=noninteractive RUNLEVEL=1 apt-get install -y -qq --no-install-recommends "${pkgs[@]}"

have_pg || { echo "install-test-servers: PostgreSQL binaries still missing" >&2; exit 1; }
have_mariadb || { echo "install-test-servers: MariaDB binaries still missing" >&2; exit 1; }
have_chromium || { echo "install-test-servers: chromium still missing" >&2; exit 1; }
command -v zsh >/dev/null || { echo "install-test-servers: zsh still missing" >&2; exit 1; }
command -v fish >/dev/null || { echo "install-test-servers: fish still missing" >&2; exit 1; }
have_kdc || { echo "install-test-servers: MIT Kerberos KDC binaries still missing" >&2; exit 1; }
have_apache_gssapi || { echo "install-test-servers: apache2 or mod_auth_gssapi still missing" >&2; exit 1; }
have_pg_jdbc || { echo "install-test-servers: libpostgresql-jdbc-java still missing" >&2; exit 1; }
echo "install-test-servers: done"
