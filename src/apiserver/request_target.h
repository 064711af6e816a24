#pragma once

// The request line's target as kube-apiserver reads it (Go's net/url): a percent-decoded path and
// query parameters, plus the two checks the connection code makes before any handler runs (the
// paths anyone may GET, and a bearer token compared in constant time). Beast-free, so that the
// rules are read and tested apart from the connection code (server_session.cc).

#include <optional>
#include <string>
#include <string_view>

#include "apiserver/http.h"

namespace muster::apiserver {

// Percent-decoding of a path (plus_is_space false) or a query component (true); nullopt for a
// malformed escape.
std::optional<std::string> Unescape(std::string_view in, bool plus_is_space);

// The paths kube-apiserver's system:public-info-viewer role lets anyone GET.
bool PublicInfoPath(std::string_view path);

// Splits an origin-form target into req.path and req.query, decoded; false for a malformed one.
bool ParseTarget(std::string_view target, HttpRequest& req);

// a == b in time that depends only on the sizes (bearer tokens).
bool ConstantTimeEquals(std::string_view a, std::string_view b);

}  // namespace muster::apiserver
