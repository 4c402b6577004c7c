# Redis 7 from Debian's packages: the Celery broker of the compose stack, without persistence
# (runs live in PostgreSQL; a lost broker message is sent again, see README "Operations").
#   podman build -f containers/redis.Dockerfile -t ccbench/redis .
FROM debian:bookworm-slim
LABEL org.opencontainers.image.title="ccbench-redis" \
      org.opencontainers.image.description="Redis 7 (Debian 12 package), ccbench's broker in compose" \
      org.opencontainers.image.base.name="docker.io/library/debian:bookworm-slim"
ARG DEBIAN_FRONTEND=noninteractive
RUN apt-get update \
 && apt-get install -y --no-install-recommends redis-server \
 && rm -rf /var/lib/apt/lists/*
USER redis
WORKDIR /var/lib/redis
EXPOSE 6379
CMD ["redis-server", "--bind", "0.0.0.0", "--protected-mode", "no", "--save", "", "--appendonly", "no"]
ARG VERSION
ARG VCS_REF
LABEL org.opencontainers.image.version="$VERSION" org.opencontainers.image.revision="$VCS_REF"
