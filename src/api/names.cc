#include "api/names.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "fmt/format.h"

namespace muster::api {
namespace {

constexpr size_t kDns1123LabelMaxLength = 63;
constexpr size_t kDns1123SubdomainMaxLength = 253;
constexpr size_t kQualifiedNameMaxLength = 63;
constexpr size_t kLabelValueMaxLength = 63;

bool IsLowerAlnum(char c) { return (c >= 'a' && c <= 'z') || absl::ascii_isdigit(c); }

// [a-z0-9]([-a-z0-9]*[a-z0-9])?
bool MatchesDns1123Label(std::string_view s) {
  if (s.empty() || !IsLowerAlnum(s.front()) || !IsLowerAlnum(s.back())) return false;
  return std::all_of(s.begin(), s.end(), [](char c) { return IsLowerAlnum(c) || c == '-'; });
}

bool MatchesDns1123Subdomain(std::string_view s) {
  if (s.empty()) return false;
  size_t start = 0;
  while (true) {
    size_t dot = s.find('.', start);
    std::string_view part = s.substr(start, dot == std::string_view::npos ? s.npos : dot - start);
    if (!MatchesDns1123Label(part)) return false;
    if (dot == std::string_view::npos) return true;
    start = dot + 1;
  }
}

std::string MaxLenError(size_t n) { return fmt::format("must be no more than {} characters", n); }

const char kDns1123LabelRegexError[] =
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and "
    "must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex "
    "used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
const char kDns1123SubdomainRegexError[] =
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used "
    "for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
const char kDns1035LabelRegexError[] =
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
    "alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or "
    "'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')";
const char kQualifiedNameRegexError[] =
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
    "validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
const char kLabelValueRegexError[] =
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or "
    "'my_value',  or '12345', regex used for validation is "
    "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";

}  // namespace

bool MatchesQualifiedNamePart(std::string_view s) {
  if (s.empty() || !absl::ascii_isalnum(s.front()) || !absl::ascii_isalnum(s.back())) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return absl::ascii_isalnum(c) || c == '-' || c == '_' || c == '.';
  });
}

std::vector<std::string> Dns1123LabelErrors(std::string_view s) {
  std::vector<std::string> errs;
  if (s.size() > kDns1123LabelMaxLength) errs.push_back(MaxLenError(kDns1123LabelMaxLength));
  if (!MatchesDns1123Label(s)) {
    // Newer apimachinery names the dots when the value is a valid subdomain.
    if (MatchesDns1123Subdomain(s)) {
      errs.push_back("must not contain dots");
    } else {
      errs.push_back(kDns1123LabelRegexError);
    }
  }
  return errs;
}

std::vector<std::string> Dns1123SubdomainErrors(std::string_view s) {
  std::vector<std::string> errs;
  if (s.size() > kDns1123SubdomainMaxLength) {
    errs.push_back(MaxLenError(kDns1123SubdomainMaxLength));
  }
  if (!MatchesDns1123Subdomain(s)) errs.push_back(kDns1123SubdomainRegexError);
  return errs;
}

std::vector<std::string> Dns1035LabelErrors(std::string_view s) {
  std::vector<std::string> errs;
  if (s.size() > kDns1123LabelMaxLength) errs.push_back(MaxLenError(kDns1123LabelMaxLength));
  bool ok = !s.empty() && s.front() >= 'a' && s.front() <= 'z' && MatchesDns1123Label(s);
  if (!ok) errs.push_back(kDns1035LabelRegexError);
  return errs;
}

std::vector<std::string> QualifiedNameErrors(std::string_view value) {
  std::vector<std::string> errs;
  std::vector<std::string_view> parts;
  size_t start = 0;
  while (true) {
    size_t slash = value.find('/', start);
    if (slash == std::string_view::npos) {
      parts.push_back(value.substr(start));
      break;
    }
    parts.push_back(value.substr(start, slash - start));
    start = slash + 1;
  }
  std::string_view name;
  if (parts.size() == 1) {
    name = parts[0];
  } else if (parts.size() == 2) {
    std::string_view prefix = parts[0];
    name = parts[1];
    if (prefix.empty()) {
      errs.push_back("prefix part must be non-empty");
    } else {
      for (const std::string& msg : Dns1123SubdomainErrors(prefix)) {
        errs.push_back("prefix part " + msg);
      }
    }
  } else {
    errs.push_back(std::string("a qualified name ") + kQualifiedNameRegexError +
                   " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')");
    return errs;
  }
  if (name.empty()) {
    errs.push_back("name part must be non-empty");
  } else if (name.size() > kQualifiedNameMaxLength) {
    errs.push_back("name part " + MaxLenError(kQualifiedNameMaxLength));
  }
  if (!MatchesQualifiedNamePart(name)) {
    errs.push_back(std::string("name part ") + kQualifiedNameRegexError);
  }
  return errs;
}

std::vector<std::string> LabelValueErrors(std::string_view value) {
  std::vector<std::string> errs;
  if (value.size() > kLabelValueMaxLength) errs.push_back(MaxLenError(kLabelValueMaxLength));
  if (!value.empty() && !MatchesQualifiedNamePart(value)) errs.push_back(kLabelValueRegexError);
  return errs;
}

bool IsDns1123Label(std::string_view s) {
  return s.size() <= kDns1123LabelMaxLength && MatchesDns1123Label(s);
}

bool IsDns1123Subdomain(std::string_view s) {
  return s.size() <= kDns1123SubdomainMaxLength && MatchesDns1123Subdomain(s);
}

bool IsQualifiedName(std::string_view s) {
  std::string_view name = s;
  const size_t slash = s.find('/');
  if (slash != std::string_view::npos) {
    std::string_view prefix = s.substr(0, slash);
    if (prefix.empty() || !IsDns1123Subdomain(prefix)) return false;
    name = s.substr(slash + 1);
  }
  return name.size() <= kQualifiedNameMaxLength && MatchesQualifiedNamePart(name);
}

bool IsLabelValue(std::string_view s) {
  return s.empty() || (s.size() <= kLabelValueMaxLength && MatchesQualifiedNamePart(s));
}

}  // namespace muster::api
