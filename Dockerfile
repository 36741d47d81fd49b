# syntax=docker/dockerfile:1
#
# The rlbench binary in a small image, for docker-compose.yml and CI. Build it
# from the repository root:
#
#   docker build -t rlbench:dev .
#   docker run --rm -p 127.0.0.1:8080:8080 rlbench:dev serve --addr 0.0.0.0:8080
#
# It runs as the unprivileged user rlbench (uid 10001).
#
# The image holds redis-server too, so `rlbench run` can start its own Redis
# (provider process) when no external one is given.

# Base images are pinned by digest (the tag is for people); refresh both with
#   docker buildx imagetools inspect golang:1.26-bookworm --format '{{json .Manifest.Digest}}'
#   docker buildx imagetools inspect debian:bookworm-slim --format '{{json .Manifest.Digest}}'
FROM golang:1.26-bookworm@sha256:a688600ca24f8a4d3ca77f95b0dd40704a9fc787c826660eb7ba0b641b8b175d AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/rlbench ./cmd/rlbench

FROM debian:bookworm-slim@sha256:3783cc01769c7b2b1b83a5c5ad96c815348e28ed7da68e2e3687004faa906251
RUN apt-get update \
 && apt-get install -y --no-install-recommends redis-server ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --system --uid 10001 --home-dir /work --create-home rlbench
COPY --from=build /out/rlbench /usr/local/bin/rlbench
COPY sampleapi/config/ /etc/rlbench/
USER rlbench
WORKDIR /work
EXPOSE 8080
STOPSIGNAL SIGTERM
ENTRYPOINT ["rlbench"]
CMD ["serve", "--addr", "0.0.0.0:8080"]
