#pragma once

// The HTTP(S) transport: Kubernetes REST over HTTP/1.1 to muster's own API server or any
// kube-apiserver, configured from a kubeconfig as kubectl reads one.
//
// - Connections are kept alive and reused (a small pool); a reused connection that the server
//   closed meanwhile is replaced transparently.
// - HTTPS with OpenSSL: the server certificate is verified against the kubeconfig's CA
//   (certificate-authority-data or certificate-authority file; the system's CAs when neither is
//   given) and the server's host name or IP, unless insecure-skip-tls-verify is set. Client
//   certificates (client-certificate(-data), client-key(-data)) and bearer tokens (token,
//   tokenFile) are sent when configured. A token file is re-read once a minute, as client-go's
//   cached file token source does (the kubelet rotates a projected service-account token well
//   before it expires), and at once when the server answers 401: a request refused so is sent
//   once more when the file then holds another token.
// - Streaming GETs (watch, log follow) decode chunked bodies line by line and check `stop`
//   every 250 ms.
// - Client-side rate limiting as client-go's (flowcontrol.NewTokenBucketRateLimiter): `qps`
//   requests a second on average with bursts of `burst`; each request, and each stream's start
//   (a watch counts once, however long it runs), takes a token, waiting for one when the bucket
//   is empty.
//
// InClusterConfig is client-go's rest.InClusterConfig: the API server and credentials a pod's
// service account gives it.
//
// This is the only translation unit of the client layer that includes Boost.Beast.

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "client/client.h"

namespace muster::client {

struct HttpTransportConfig {
  std::string server;  // "https://10.0.0.5:6443" or "http://127.0.0.1:6443"
  // TLS. PEM texts (a kubeconfig's file references are read by LoadKubeconfig).
  std::string ca_pem;  // empty: the system's trusted CAs
  bool insecure_skip_tls_verify = false;
  std::string tls_server_name;  // the name to verify instead of the URL's host
  std::string client_cert_pem;
  std::string client_key_pem;
  // Authentication: a bearer token, or a file holding one.
  std::string token;
  std::string token_file;
  // The context's namespace ("" when the kubeconfig names none).
  std::string default_namespace;
  // A non-streaming request fails with Unavailable after this long.
  std::chrono::milliseconds request_timeout = std::chrono::seconds(60);
  // Idle keep-alive connections kept for reuse.
  size_t max_idle_connections = 16;
  // Client-side rate limit: requests a second on average (0: unlimited) and the most sent at
  // once after a quiet spell (below 1 counts as 1). Volcano's --kube-api-qps, --kube-api-burst.
  double qps = 0;
  int burst = 0;
};

// Reads a kubeconfig (YAML): the named context, else current-context, and its cluster and user.
// Relative file paths in it are relative to the kubeconfig's directory, as kubectl reads them.
// InvalidArgument with a message naming what is missing or malformed; NotFound when the file
// does not exist.
absl::StatusOr<HttpTransportConfig> LoadKubeconfig(const std::string& path,
                                                   const std::string& context = "");

// The API server of the cluster this process runs in, as a pod sees it: https:// to
// $KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT (an IPv6 host in brackets), the service
// account's ca.crt as the CA, its token as token_file (re-read as it rotates), and the namespace
// from $POD_NAMESPACE, else the service account's namespace file, else "default" (clientcmd's
// in-cluster namespace). NotFound when the variables are not set (not in a cluster);
// FailedPrecondition naming the file when ca.crt or the token cannot be read or the token is
// empty. client-go goes on without a CA it cannot read (the system's CAs then fail to verify the
// server, less clearly); muster refuses at once.
absl::StatusOr<HttpTransportConfig> InClusterConfig(
    const std::string& service_account_dir = "/var/run/secrets/kubernetes.io/serviceaccount");

// A transport for `config`. InvalidArgument for a server URL that does not parse or TLS
// material OpenSSL refuses. Connects lazily (the first request).
absl::StatusOr<std::shared_ptr<Transport>> MakeHttpTransport(const HttpTransportConfig& config);

}  // namespace muster::client
