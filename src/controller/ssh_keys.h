#pragma once

// An SSH key pair for Volcano's ssh job plugin (job_plugins.h), made as its generateRsaKey
// makes one: an RSA key, the private half PEM-encoded in PKCS #1 ("RSA PRIVATE KEY", what Go's
// x509.MarshalPKCS1PrivateKey and OpenSSH both read), the public half as an authorized_keys line
// ("ssh-rsa AAAA...\n", golang.org/x/crypto/ssh's MarshalAuthorizedKey).
//
// Thread-safety: the functions share no state (OpenSSL's generator is thread-safe).

#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace muster::controller {

struct SshKeyPair {
  std::string private_key_pem;
  std::string authorized_key;
};

// A new RSA key of `bits` bits (Volcano: 2048). Internal when OpenSSL fails.
absl::StatusOr<SshKeyPair> GenerateRsaKeyPair(int bits);

// The authorized_keys line of the RSA public key with exponent `e` and modulus `n` (unsigned
// big-endian bytes): "ssh-rsa " + base64 of the key's wire form (RFC 4253 section 6.6: the
// string "ssh-rsa", then mpint e and mpint n) + "\n".
std::string SshRsaAuthorizedKey(std::string_view e, std::string_view n);

}  // namespace muster::controller
