# syntax=docker/dockerfile:1
# The aro-gitops image: a release build, on a slim Debian with only what the binary links
# (`ldd aro-gitops`: libssl3, libcrypto3, zlib, libgcc_s, libc) and CA certificates for https
# remotes and Azure. git is not needed: the agent speaks git through libgit2.
#   docker build -t aro-gitops .

FROM rust:1.95-bookworm AS build
WORKDIR /src
# rust:bookworm already has pkg-config, libssl-dev and zlib1g-dev; libgit2 and libssh2 are built
# from source by their crates.
COPY Cargo.toml Cargo.lock ./
COPY src ./src
COPY schemas ./schemas
COPY benches ./benches
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/src/target \
    cargo build --release --locked --bin aro-gitops \
    && cp target/release/aro-gitops /usr/local/bin/aro-gitops

FROM debian:bookworm-slim
# Versions follow the Debian release of the base image (security updates included); pinning
# them would break the build at every point release.
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends ca-certificates libssl3 \
    && rm -rf /var/lib/apt/lists/* \
    && install -d -o 65532 -g 65532 /var/lib/aro-gitops
COPY --from=build /usr/local/bin/aro-gitops /usr/local/bin/aro-gitops
# Non-root, numeric (runAsNonRoot can check it); the same uid as deploy/base. The state directory
# is the working directory (deploy/base mounts an emptyDir there).
USER 65532:65532
WORKDIR /var/lib/aro-gitops
EXPOSE 8080 8081 9090
ENTRYPOINT ["/usr/local/bin/aro-gitops"]
CMD ["--help"]
