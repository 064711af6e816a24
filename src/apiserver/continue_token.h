#pragma once

// The `continue` token: kube's (storage.EncodeContinue: base64url of {"v","rv","start"}, the
// list's revision and the last key returned) plus "sig", an HMAC-SHA256 under this server's key
// of the revision, the resource, the list's namespace and the start key. A token is only good
// for the list it came from, and one made up by a client is refused rather than read.
// Kubernetes' apiserver/pkg/storage/continue.go gives the format and the refusals' messages.

#include <cstdint>
#include <string>
#include <string_view>

#include "apiserver/api_error.h"

namespace muster::apiserver {

// A decoded token: the list's revision and the key (ns/name) after which the next page starts.
struct ContinueToken {
  int64_t revision = 0;
  std::string ns;
  std::string name;
  std::string start;
  std::string signature;
};

// The token for the page after `ns`/`name` of the list of `resource` in `list_ns` ("" for all
// namespaces) at `revision`, signed under `key`.
std::string EncodeContinue(std::string_view key, int64_t revision, std::string_view resource,
                           std::string_view list_ns, std::string_view ns, std::string_view name);

// The token `text` decodes to, or kube's 400 "invalid continue token: ..." for one that is not
// base64url of the JSON above, has no revision, or a start key that is not ns/name.
ApiResult<ContinueToken> DecodeContinue(std::string_view text);

// Whether `token` was issued by this server (its `key`) for the list of `resource` in `list_ns`.
bool ContinueSignedFor(const ContinueToken& token, std::string_view key, std::string_view resource,
                       std::string_view list_ns);

}  // namespace muster::apiserver
