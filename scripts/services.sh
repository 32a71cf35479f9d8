#!/usr/bin/env bash
# Start the local PostgreSQL and MariaDB servers when they are installed but stopped.
# Where one is not installed, its tests skip with a message (and fail under CI=true).
set -u

start_postgres() {
  if ! command -v pg_ctlcluster >/dev/null 2>&1; then
    echo "services: PostgreSQL is not installed; its tests will be skipped." >&2
    return 0
  fi
  if pg_isready -q -h 127.0.0.1 -p 5432; then
    return 0
  fi
  echo "services: starting PostgreSQL" >&2
  for version in $(ls /etc/postgresql 2>/dev/null); do
    pg_ctlcluster --skip-systemctl-redirect "$version" main start || true
  done
  for _ in $(seq 1 30); do
    pg_isready -q -h 127.0.0.1 -p 5432 && return 0
    sleep 1
  done
  echo "services: PostgreSQL did not come up" >&2
}

mariadb_ready() {
  # ping succeeds once the server answers, whatever the login would say.
  mariadb-admin --protocol=tcp -h 127.0.0.1 -P 3306 ping >/dev/null 2>&1
}

# The tests log in as root with no password over TCP, into database `test`. A fresh
# Debian install lets root in only through the socket: under CI, open it up.
prepare_mariadb() {
  if mariadb --protocol=tcp -h 127.0.0.1 -P 3306 -u root -e "CREATE DATABASE IF NOT EXISTS test" \
      >/dev/null 2>&1; then
    return 0
  fi
  if [ "${CI:-}" = "true" ]; then
    mariadb -u root -e "ALTER USER 'root'@'localhost' IDENTIFIED VIA mysql_native_password \
      USING PASSWORD(''); CREATE DATABASE IF NOT EXISTS test" || true
  else
    echo "services: MariaDB refuses root with no password over TCP; its tests will skip." >&2
  fi
}

start_mariadb() {
  if [ ! -x /usr/sbin/mariadbd ]; then
    echo "services: MariaDB is not installed; its tests will be skipped." >&2
    return 0
  fi
  if mariadb_ready; then
    prepare_mariadb
    return 0
  fi
  echo "services: starting MariaDB" >&2
  mkdir -p /run/mysqld && chown mysql:mysql /run/mysqld 2>/dev/null || true
  start-stop-daemon --start --oknodo --background --exec /usr/sbin/mariadbd || true
  for _ in $(seq 1 30); do
    if mariadb_ready; then
      prepare_mariadb
      return 0
    fi
    sleep 1
  done
  echo "services: MariaDB did not come up" >&2
}

start_postgres
start_mariadb
exit 0
