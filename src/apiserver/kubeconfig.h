#pragma once

// Client credentials the API server hands out: the kubeconfig kubectl reads (cluster, user and
// context all named `muster`), the bearer token and the self-signed TLS material needed when the
// server listens beyond loopback. Files holding secrets are written with mode 0600, atomically
// (a temporary file renamed into place), so a reader never sees half a file.

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace muster::apiserver {

struct KubeconfigOptions {
  std::string server;  // "http://127.0.0.1:6443" or "https://10.0.0.5:6443"
  std::string token;   // empty: no credentials (loopback)
  std::string ca_pem;  // empty: no certificate-authority-data (plain HTTP)
};

// The kubeconfig YAML text.
std::string RenderKubeconfig(const KubeconfigOptions& options);

// Writes `contents` to `path` with mode 0600 (atomically).
absl::Status WritePrivateFile(const std::string& path, const std::string& contents);

// The bearer token in `path`, created (32 random bytes, hex) when the file does not exist.
absl::StatusOr<std::string> LoadOrCreateToken(const std::string& path);

struct TlsMaterial {
  std::string ca_cert_pem;      // what clients trust (written to <dir>/ca.crt)
  std::string server_cert_pem;  // signed by the CA, SANs for the given hosts
  std::string server_key_pem;
};

// Loads <dir>/ca.crt, <dir>/ca.key, <dir>/server.crt and <dir>/server.key, generating (with
// OpenSSL: EC P-256 keys, a self-signed CA valid 10 years, a server certificate valid 1 year)
// whatever is missing, or a server certificate that does not cover every host in `hosts` (IP
// literals become IP SANs, names DNS SANs). Keys are written with mode 0600.
absl::StatusOr<TlsMaterial> LoadOrCreateTls(const std::string& dir,
                                            const std::vector<std::string>& hosts);

}  // namespace muster::apiserver
