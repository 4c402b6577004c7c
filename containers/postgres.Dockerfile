# PostgreSQL 15 from Debian's packages, for the compose stack on machines that reach Debian's
# archive but no image registry. It reads the official image's variables (POSTGRES_USER,
# POSTGRES_PASSWORD or POSTGRES_PASSWORD_FILE, POSTGRES_DB, PGDATA), so `postgres:15` can
# replace it where a registry is reachable.
#   podman build -f containers/postgres.Dockerfile -t ccbench/postgres .
FROM debian:bookworm-slim
LABEL org.opencontainers.image.title="ccbench-postgres" \
      org.opencontainers.image.description="PostgreSQL 15 (Debian 12 package) for ccbench's compose stack" \
      org.opencontainers.image.base.name="docker.io/library/debian:bookworm-slim"
ARG DEBIAN_FRONTEND=noninteractive
RUN apt-get update \
 && apt-get install -y --no-install-recommends postgresql-15 \
 && rm -rf /var/lib/apt/lists/* \
 && install -d -o postgres -g postgres -m 0700 /var/lib/postgresql/data \
 && install -d -o postgres -g postgres -m 2775 /var/run/postgresql
COPY containers/postgres-entrypoint.sh /usr/local/bin/postgres-entrypoint
ENV PATH=/usr/lib/postgresql/15/bin:$PATH PGDATA=/var/lib/postgresql/data
VOLUME ["/var/lib/postgresql/data"]
EXPOSE 5432
STOPSIGNAL SIGINT
ENTRYPOINT ["postgres-entrypoint"]
CMD ["postgres"]
ARG VERSION
ARG VCS_REF
LABEL org.opencontainers.image.version="$VERSION" org.opencontainers.image.revision="$VCS_REF"
