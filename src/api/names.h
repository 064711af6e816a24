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

// The same rules as yes or no, for callers with messages of their own (the label selector parser,
// the cluster file): true exactly when the matching ...Errors function returns nothing.
bool IsDns1123Label(std::string_view s);
bool IsDns1123Subdomain(std::string_view s);
bool IsQualifiedName(std::string_view s);
bool IsLabelValue(std::string_view s);
// ([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9], length aside: a qualified name's name part and a
// non-empty label value.
bool MatchesQualifiedNamePart(std::string_view s);

}  // namespace muster::api
