#include "controller/ssh_keys.h"

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include <cstdint>
#include <memory>

#include "absl/strings/escaping.h"

namespace muster::controller {

namespace {

struct EvpPkeyFree {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};
struct BioFree {
  void operator()(BIO* b) const { BIO_free(b); }
};
struct BnFree {
  void operator()(BIGNUM* b) const { BN_free(b); }
};

absl::Status OpenSslError(std::string_view what) {
  const unsigned long code = ERR_get_error();
  char text[256] = "unknown error";
  if (code != 0) ERR_error_string_n(code, text, sizeof(text));
  ERR_clear_error();
  return absl::InternalError(std::string(what) + ": " + text);
}

// RFC 4251's string: a uint32 length, then the bytes.
void AppendSshString(std::string& out, std::string_view bytes) {
  const auto n = static_cast<uint32_t>(bytes.size());
  for (int shift = 24; shift >= 0; shift -= 8) {
    out.push_back(static_cast<char>((n >> shift) & 0xff));
  }
  out.append(bytes);
}

// RFC 4251's mpint of a non-negative number: no leading zero bytes, but one zero byte in front
// when the top bit is set (two's complement).
void AppendSshMpint(std::string& out, std::string_view magnitude) {
  while (!magnitude.empty() && magnitude.front() == '\0') magnitude.remove_prefix(1);
  std::string bytes;
  if (!magnitude.empty() && (static_cast<unsigned char>(magnitude.front()) & 0x80) != 0) {
    bytes.push_back('\0');
  }
  bytes.append(magnitude);
  AppendSshString(out, bytes);
}

absl::StatusOr<std::string> BigEndianParam(const EVP_PKEY* key, const char* name) {
  BIGNUM* raw = nullptr;
  if (EVP_PKEY_get_bn_param(key, name, &raw) != 1) return OpenSslError("reading the RSA key");
  std::unique_ptr<BIGNUM, BnFree> bn(raw);
  std::string bytes(static_cast<size_t>(BN_num_bytes(bn.get())), '\0');
  BN_bn2bin(bn.get(), reinterpret_cast<unsigned char*>(bytes.data()));
  return bytes;
}

}  // namespace

std::string SshRsaAuthorizedKey(std::string_view e, std::string_view n) {
  std::string wire;
  AppendSshString(wire, "ssh-rsa");
  AppendSshMpint(wire, e);
  AppendSshMpint(wire, n);
  return "ssh-rsa " + absl::Base64Escape(wire) + "\n";
}

absl::StatusOr<SshKeyPair> GenerateRsaKeyPair(int bits) {
  std::unique_ptr<EVP_PKEY, EvpPkeyFree> key(
      EVP_PKEY_Q_keygen(nullptr, nullptr, "RSA", static_cast<size_t>(bits)));
  if (key == nullptr) return OpenSslError("generating an RSA key");

  std::unique_ptr<BIO, BioFree> pem(BIO_new(BIO_s_mem()));
  if (pem == nullptr ||
      PEM_write_bio_PrivateKey_traditional(pem.get(), key.get(), nullptr, nullptr, 0, nullptr,
                                           nullptr) != 1) {
    return OpenSslError("encoding the RSA key");
  }
  char* data = nullptr;
  const long size = BIO_get_mem_data(pem.get(), &data);
  SshKeyPair pair;
  pair.private_key_pem.assign(data, static_cast<size_t>(size));

  absl::StatusOr<std::string> e = BigEndianParam(key.get(), OSSL_PKEY_PARAM_RSA_E);
  if (!e.ok()) return e.status();
  absl::StatusOr<std::string> n = BigEndianParam(key.get(), OSSL_PKEY_PARAM_RSA_N);
  if (!n.ok()) return n.status();
  pair.authorized_key = SshRsaAuthorizedKey(*e, *n);
  return pair;
}

}  // namespace muster::controller
