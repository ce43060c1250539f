#!/bin/sh
# Initialise PGDATA on first start as the postgres image does
# (POSTGRES_USER, POSTGRES_DB, POSTGRES_PASSWORD or POSTGRES_PASSWORD_FILE),
# then run the server in the foreground, listening on every address.
set -eu
mkdir -p "$PGDATA" /run/postgresql
chown postgres:postgres "$PGDATA" /run/postgresql
chmod 0700 "$PGDATA"
if [ ! -s "$PGDATA/PG_VERSION" ]; then
	pw=${POSTGRES_PASSWORD:-}
	if [ -n "${POSTGRES_PASSWORD_FILE:-}" ]; then pw=$(cat "$POSTGRES_PASSWORD_FILE"); fi
	printf '%s\n' "$pw" > /tmp/pw && chown postgres /tmp/pw
	su postgres -s /bin/sh -c "initdb --username='$POSTGRES_USER' --pwfile=/tmp/pw --auth-host=scram-sha-256 --auth-local=trust -D '$PGDATA'" >/dev/null
	rm -f /tmp/pw
	echo "host all all 0.0.0.0/0 scram-sha-256" >> "$PGDATA/pg_hba.conf"
	su postgres -s /bin/sh -c "pg_ctl -D '$PGDATA' -o '-c listen_addresses=' -w start" >/dev/null
	su postgres -s /bin/sh -c "createdb --username='$POSTGRES_USER' '$POSTGRES_DB'"
	su postgres -s /bin/sh -c "pg_ctl -D '$PGDATA' -m fast -w stop" >/dev/null
fi
exec su postgres -s /bin/sh -c "exec postgres -D '$PGDATA' -c listen_addresses='*'"
