# The muster image that deploy/ runs (/usr/bin/muster): scheduler, controller and device plugin.
#   docker build -t muster:0.1.0 .
# Build stage: Debian 12 with the packages scripts/install-deps lists; run stage: their runtime
# libraries only, as a non-root user.
FROM debian:12 AS build
WORKDIR /src
COPY . .
RUN apt-get update && apt-get install -y --no-install-recommends make sudo \
 && scripts/install-deps \
 && cmake --preset release -DMUSTER_BUILD_TESTS=OFF \
 && cmake --build --preset release --target muster --parallel "$(nproc)" \
 && install -D -m 0755 build/release/src/cmd/muster /out/usr/bin/muster

FROM debian:12-slim
RUN apt-get update && apt-get install -y --no-install-recommends \
      ca-certificates libgrpc++1.51 libprotobuf32 libyaml-cpp0.7 libsqlite3-0 libssl3 \
      libjemalloc2 libfmt9 libspdlog1.10 libprometheus-cpp-core1.0 libprometheus-cpp-pull1.0 \
      libboost-json1.81.0 libboost-url1.81.0 libabsl20220623 libsimdjson14 \
 && rm -rf /var/lib/apt/lists/*
COPY --from=build /out/ /
USER 65532:65532
ENTRYPOINT ["/usr/bin/muster"]
