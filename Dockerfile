# syntax=docker/dockerfile:1

# Build a static binary: the embedded store (modernc.org/sqlite) is pure Go,
# so CGO is not needed.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o /out/warden . \
 && mkdir -p /out/data

# distroless static: no shell, no package manager, CA certificates and
# tzdata included; 65532 is its "nonroot" user.
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/warden /warden
COPY --from=build --chown=65532:65532 /out/data /data
ENV WARDEN_HOME=/data
VOLUME ["/data"]
USER 65532:65532
# control plane + console 8080, tool gateway 8081, MCP gateway 8082, model
# router 8083, memory 8084, RAG 8085, trace query 8086, OTLP gRPC 4317 and
# HTTP 4318.
EXPOSE 8080-8086 4317 4318
ENTRYPOINT ["/warden"]
# Off loopback Warden serves TLS only: mount a certificate pair at
# /etc/warden/tls (a Kubernetes TLS secret has exactly these file names), or
# override the command with --insecure-allow-plaintext when a proxy in front
# terminates TLS.
CMD ["up", "--listen-host", "0.0.0.0", "--tls-cert", "/etc/warden/tls/tls.crt", "--tls-key", "/etc/warden/tls/tls.key"]
