#include "api/yaml_write.h"

#include <cctype>
#include <string_view>

#include "boost/json/object.hpp"
#include "boost/json/serialize.hpp"
#include "yaml-cpp/emitter.h"
#include "yaml-cpp/emittermanip.h"

namespace muster::api {
namespace {

// Plain scalars that YAML 1.1 (go-yaml v2, which kubectl uses) reads as a non-string.
bool NeedsQuotes(std::string_view s) {
  if (s.empty() || std::isspace(static_cast<unsigned char>(s.front())) ||
      std::isspace(static_cast<unsigned char>(s.back()))) {
    return true;
  }
  std::string lower;
  for (char c : s) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (std::string_view word : {"y", "n", "yes", "no", "on", "off", "true", "false", "null", "~"}) {
    if (lower == word) return true;
  }
  const unsigned char first = static_cast<unsigned char>(s.front());
  // Numbers, signs, .inf/.nan, and YAML indicators (& * ! | > ' " % @ ` # - ? : , [ ] { }).
  if (std::isdigit(first) || std::string_view("+-.&*!|>'\"%@`#?:,[]{}=<").find(static_cast<char>(
                                 first)) != std::string_view::npos) {
    return true;
  }
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '#' || s[i] == '\n' || s[i] == '\t' || (s[i] == ':' && i + 1 < s.size() &&
                                                         s[i + 1] == ' ') ||
        (s[i] == ':' && i + 1 == s.size())) {
      return true;
    }
    if (static_cast<unsigned char>(s[i]) < 0x20) return true;
  }
  return false;
}

void Emit(YAML::Emitter& out, const boost::json::value& v) {
  switch (v.kind()) {
    case boost::json::kind::object: {
      const auto& obj = v.as_object();
      if (obj.empty()) {
        out << YAML::Flow << YAML::BeginMap << YAML::EndMap;
        return;
      }
      out << YAML::BeginMap;
      for (const auto& [key, item] : obj) {
        out << YAML::Key;
        std::string_view k = key;
        if (NeedsQuotes(k)) out << YAML::DoubleQuoted;
        out << std::string(k) << YAML::Value;
        Emit(out, item);
      }
      out << YAML::EndMap;
      return;
    }
    case boost::json::kind::array: {
      const auto& arr = v.as_array();
      if (arr.empty()) {
        out << YAML::Flow << YAML::BeginSeq << YAML::EndSeq;
        return;
      }
      out << YAML::BeginSeq;
      for (const auto& item : arr) Emit(out, item);
      out << YAML::EndSeq;
      return;
    }
    case boost::json::kind::string: {
      std::string_view s = v.as_string();
      if (NeedsQuotes(s)) out << YAML::DoubleQuoted;
      out << std::string(s);
      return;
    }
    case boost::json::kind::bool_:
      out << (v.as_bool() ? "true" : "false");
      return;
    case boost::json::kind::null:
      out << YAML::Null;
      return;
    default:  // numbers as JSON writes them
      out << boost::json::serialize(v);
      return;
  }
}

}  // namespace

std::string JsonToYaml(const boost::json::value& value) {
  YAML::Emitter out;
  out.SetIndent(2);
  out.SetSeqFormat(YAML::Block);
  Emit(out, value);
  std::string text = out.c_str();
  if (text.empty() || text.back() != '\n') text += '\n';
  return text;
}

}  // namespace muster::api
