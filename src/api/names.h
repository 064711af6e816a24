#pragma once

// apimachinery's name rules (util/validation: IsDNS1123Label, IsDNS1123Subdomain, IsDNS1035Label,
// IsQualifiedName, IsValidLabelValue) with kube's own messages, which the API server's
// validation and the label selector parser quote: one string per broken rule, empty when the
// value is valid.
//
// Thread-safety: every function is pure.

#include <string>
#include <string_view>
#include <vector>

namespace muster::api {

std::vector<std::string> Dns1123LabelErrors(std::string_view s);
std::vector<std::string> Dns1123SubdomainErrors(std::string_view s);
std::vector<std::string> Dns1035LabelErrors(std::string_view s);
// A label key, annotation key or other qualified name: [DNS-1123 subdomain prefix "/"] name.
std::vector<std::string> QualifiedNameErrors(std::string_view value);
std::vector<std::string> LabelValueErrors(std::string_view value);

}  // namespace muster::api
