#include "apiserver/kubeconfig.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>

#include "absl/strings/escaping.h"
#include "common/files.h"
#include "fmt/format.h"
#include "openssl/bn.h"
#include "openssl/err.h"
#include "openssl/evp.h"
#include "openssl/pem.h"
#include "openssl/rand.h"
#include "openssl/x509.h"
#include "openssl/x509v3.h"

namespace muster::apiserver {

std::string RenderKubeconfig(const KubeconfigOptions& options) {
  std::string out;
  out += "apiVersion: v1\n";
  out += "kind: Config\n";
  out += "clusters:\n";
  out += "- name: muster\n";
  out += "  cluster:\n";
  out += fmt::format("    server: {}\n", options.server);
  if (!options.ca_pem.empty()) {
    out += fmt::format("    certificate-authority-data: {}\n", absl::Base64Escape(options.ca_pem));
  }
  out += "users:\n";
  out += "- name: muster\n";
  if (options.token.empty()) {
    out += "  user: {}\n";
  } else {
    out += "  user:\n";
    out += fmt::format("    token: {}\n", options.token);
  }
  out += "contexts:\n";
  out += "- name: muster\n";
  out += "  context:\n";
  out += "    cluster: muster\n";
  out += "    user: muster\n";
  out += "    namespace: default\n";
  out += "current-context: muster\n";
  return out;
}

absl::Status WritePrivateFile(const std::string& path, const std::string& contents) {
  std::string tmp = fmt::format("{}.tmp.{}", path, ::getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) {
    return absl::UnavailableError(fmt::format("cannot write {}: {}", tmp, std::strerror(errno)));
  }
  ::fchmod(fd, 0600);  // whatever the umask
  size_t done = 0;
  while (done < contents.size()) {
    ssize_t n = ::write(fd, contents.data() + done, contents.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      int err = errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      return absl::UnavailableError(fmt::format("cannot write {}: {}", tmp, std::strerror(err)));
    }
    done += static_cast<size_t>(n);
  }
  ::fsync(fd);
  ::close(fd);
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    return absl::UnavailableError(
        fmt::format("cannot rename {} to {}: {}", tmp, path, std::strerror(err)));
  }
  return absl::OkStatus();
}

namespace {

using common::ReadFile;

}  // namespace

absl::StatusOr<std::string> LoadOrCreateToken(const std::string& path) {
  if (auto existing = ReadFile(path)) {
    std::string token = *existing;
    while (!token.empty() && (token.back() == '\n' || token.back() == '\r')) token.pop_back();
    if (!token.empty()) return token;
  }
  unsigned char raw[32];
  if (RAND_bytes(raw, sizeof(raw)) != 1) {
    return absl::InternalError("cannot generate a token: RAND_bytes failed");
  }
  std::string token =
      absl::BytesToHexString(absl::string_view(reinterpret_cast<const char*>(raw), sizeof(raw)));
  if (auto s = WritePrivateFile(path, token + "\n"); !s.ok()) return s;
  return token;
}

namespace {

// --- Self-signed TLS material (OpenSSL) -------------------------------------------------------

struct PkeyDeleter {
  void operator()(EVP_PKEY* p) const { EVP_PKEY_free(p); }
};
struct X509Deleter {
  void operator()(X509* x) const { X509_free(x); }
};
struct BioDeleter {
  void operator()(BIO* b) const { BIO_free(b); }
};
using Pkey = std::unique_ptr<EVP_PKEY, PkeyDeleter>;
using Cert = std::unique_ptr<X509, X509Deleter>;
using Bio = std::unique_ptr<BIO, BioDeleter>;

std::string OpenSslError(std::string_view what) {
  unsigned long code = ERR_get_error();
  char buf[256] = "unknown error";
  if (code != 0) ERR_error_string_n(code, buf, sizeof(buf));
  return fmt::format("{}: {}", what, buf);
}

std::string BioText(BIO* bio) {
  char* data = nullptr;
  long n = BIO_get_mem_data(bio, &data);
  return n > 0 ? std::string(data, static_cast<size_t>(n)) : std::string();
}

std::string KeyPem(EVP_PKEY* key) {
  Bio bio(BIO_new(BIO_s_mem()));
  PEM_write_bio_PrivateKey(bio.get(), key, nullptr, nullptr, 0, nullptr, nullptr);
  return BioText(bio.get());
}

std::string CertPem(X509* cert) {
  Bio bio(BIO_new(BIO_s_mem()));
  PEM_write_bio_X509(bio.get(), cert);
  return BioText(bio.get());
}

Pkey KeyFromPem(const std::string& pem) {
  Bio bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  return Pkey(PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr));
}

Cert CertFromPem(const std::string& pem) {
  Bio bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  return Cert(PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr));
}

bool IsIpLiteral(const std::string& host) {
  unsigned char buf[16];
  return inet_pton(AF_INET, host.c_str(), buf) == 1 || inet_pton(AF_INET6, host.c_str(), buf) == 1;
}

bool AddExtension(X509* cert, X509* issuer, int nid, const std::string& value) {
  X509V3_CTX ctx;
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value.c_str());
  if (ext == nullptr) return false;
  bool ok = X509_add_ext(cert, ext, -1) == 1;
  X509_EXTENSION_free(ext);
  return ok;
}

// A certificate for `key` named `common_name`, signed by `issuer_key` (self-signed when
// `issuer` is null).
absl::StatusOr<Cert> MakeCert(EVP_PKEY* key, const std::string& common_name, X509* issuer,
                              EVP_PKEY* issuer_key, long days,
                              const std::vector<std::pair<int, std::string>>& extensions) {
  Cert cert(X509_new());
  if (!cert) return absl::InternalError(OpenSslError("X509_new"));
  X509_set_version(cert.get(), 2);
  unsigned char serial[16];
  RAND_bytes(serial, sizeof(serial));
  serial[0] &= 0x7f;
  BIGNUM* bn = BN_bin2bn(serial, sizeof(serial), nullptr);
  BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(cert.get()));
  BN_free(bn);
  X509_gmtime_adj(X509_getm_notBefore(cert.get()), -3600);
  X509_gmtime_adj(X509_getm_notAfter(cert.get()), days * 24 * 3600);
  X509_set_pubkey(cert.get(), key);
  X509_NAME* name = X509_get_subject_name(cert.get());
  X509_NAME_add_entry_by_txt(name, "O", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>("muster"), -1, -1, 0);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>(common_name.c_str()), -1, -1,
                             0);
  X509_set_issuer_name(cert.get(), issuer != nullptr ? X509_get_subject_name(issuer) : name);
  X509* signer = issuer != nullptr ? issuer : cert.get();
  for (const auto& [nid, value] : extensions) {
    if (!AddExtension(cert.get(), signer, nid, value)) {
      return absl::InternalError(OpenSslError(fmt::format("certificate extension {}", value)));
    }
  }
  if (X509_sign(cert.get(), issuer_key, EVP_sha256()) == 0) {
    return absl::InternalError(OpenSslError("X509_sign"));
  }
  return cert;
}

bool CoversHosts(X509* cert, const std::vector<std::string>& hosts) {
  if (X509_cmp_current_time(X509_get0_notAfter(cert)) <= 0) return false;
  // Renew a month before expiry rather than fail then.
  ASN1_TIME* soon = X509_time_adj_ex(nullptr, 30, 0, nullptr);
  bool expiring = ASN1_TIME_compare(X509_get0_notAfter(cert), soon) < 0;
  ASN1_TIME_free(soon);
  if (expiring) return false;
  for (const auto& host : hosts) {
    int ok = IsIpLiteral(host) ? X509_check_ip_asc(cert, host.c_str(), 0)
                               : X509_check_host(cert, host.c_str(), host.size(), 0, nullptr);
    if (ok != 1) return false;
  }
  return true;
}

}  // namespace

absl::StatusOr<TlsMaterial> LoadOrCreateTls(const std::string& dir,
                                            const std::vector<std::string>& hosts) {
  const std::string ca_crt = dir + "/ca.crt", ca_key = dir + "/ca.key";
  const std::string srv_crt = dir + "/server.crt", srv_key = dir + "/server.key";

  Pkey ca_pkey;
  Cert ca_cert;
  if (auto c = ReadFile(ca_crt), k = ReadFile(ca_key); c && k) {
    ca_cert = CertFromPem(*c);
    ca_pkey = KeyFromPem(*k);
  }
  if (!ca_cert || !ca_pkey || X509_cmp_current_time(X509_get0_notAfter(ca_cert.get())) <= 0) {
    ca_pkey.reset(EVP_EC_gen("P-256"));
    if (!ca_pkey) return absl::InternalError(OpenSslError("generating the CA key"));
    auto cert = MakeCert(ca_pkey.get(), "muster-ca", nullptr, ca_pkey.get(), 3650,
                         {{NID_basic_constraints, "critical,CA:TRUE"},
                          {NID_key_usage, "critical,keyCertSign,cRLSign,digitalSignature"},
                          {NID_subject_key_identifier, "hash"}});
    if (!cert.ok()) return cert.status();
    ca_cert = std::move(*cert);
    if (auto s = WritePrivateFile(ca_key, KeyPem(ca_pkey.get())); !s.ok()) return s;
    if (auto s = WritePrivateFile(ca_crt, CertPem(ca_cert.get())); !s.ok()) return s;
    ::unlink(srv_crt.c_str());  // signed by the old CA
  }

  Pkey srv_pkey;
  Cert srv_cert;
  if (auto c = ReadFile(srv_crt), k = ReadFile(srv_key); c && k) {
    srv_cert = CertFromPem(*c);
    srv_pkey = KeyFromPem(*k);
  }
  bool valid = srv_cert && srv_pkey && CoversHosts(srv_cert.get(), hosts) &&
               X509_verify(srv_cert.get(), ca_pkey.get()) == 1;
  if (!valid) {
    srv_pkey.reset(EVP_EC_gen("P-256"));
    if (!srv_pkey) return absl::InternalError(OpenSslError("generating the server key"));
    std::string sans;
    for (const auto& host : hosts) {
      if (!sans.empty()) sans += ",";
      sans += (IsIpLiteral(host) ? "IP:" : "DNS:") + host;
    }
    auto cert = MakeCert(srv_pkey.get(), "muster-apiserver", ca_cert.get(), ca_pkey.get(), 365,
                         {{NID_basic_constraints, "critical,CA:FALSE"},
                          {NID_key_usage, "critical,digitalSignature,keyEncipherment"},
                          {NID_ext_key_usage, "serverAuth"},
                          {NID_subject_alt_name, sans}});
    if (!cert.ok()) return cert.status();
    srv_cert = std::move(*cert);
    if (auto s = WritePrivateFile(srv_key, KeyPem(srv_pkey.get())); !s.ok()) return s;
    if (auto s = WritePrivateFile(srv_crt, CertPem(srv_cert.get())); !s.ok()) return s;
  }

  TlsMaterial out;
  out.ca_cert_pem = CertPem(ca_cert.get());
  out.server_cert_pem = CertPem(srv_cert.get());
  out.server_key_pem = KeyPem(srv_pkey.get());
  return out;
}

}  // namespace muster::apiserver
