# Container image of the release binary (see README "Deploying"):
#   docker build -t namesrv:0.1.0 .
#   docker run -p 9876:9876 -p 8080:8080 -v namesrv-data:/var/lib/namesrv namesrv:0.1.0
# The image runs as an unprivileged user with its state (KV store, route snapshot) in the
# volume /var/lib/namesrv; deploy/kubernetes/namesrv.yaml runs it as a 3-node cluster.

FROM rust:1.95-slim-bookworm AS build
WORKDIR /src
COPY . .
RUN cargo build --release --locked --bin namesrv \
    && strip target/release/namesrv

FROM debian:bookworm-slim
RUN useradd --system --uid 10001 --user-group --home-dir /var/lib/namesrv --create-home namesrv
COPY --from=build /src/target/release/namesrv /usr/local/bin/namesrv
# Owned by the server's user: UPDATE_NAMESRV_CONFIG persists to the -c file, as in Java.
COPY --chown=10001:10001 deploy/container/namesrv.conf /etc/namesrv/namesrv.conf
ENV HOME=/var/lib/namesrv \
    ROCKETMQ_HOME=/var/lib/namesrv
USER 10001:10001
WORKDIR /var/lib/namesrv
VOLUME ["/var/lib/namesrv"]
# 9876: RocketMQ remoting; 8080: HTTP (health, metrics, address server).
EXPOSE 9876 8080
STOPSIGNAL SIGTERM
ENTRYPOINT ["/usr/local/bin/namesrv"]
CMD ["-c", "/etc/namesrv/namesrv.conf"]
