// An object's stored text with its field ownership spliced in, and found again (object_text.h).
// The serialisation is Boost.JSON's own serializer, called member by member for the top level and
// metadata (boost/json/serializer.hpp), so that the bytes are those of boost::json::serialize.

#include "store/object_text.h"

#include "boost/json/serializer.hpp"
#include "boost/json/string_view.hpp"
#include "boost/json/value.hpp"

namespace muster::store {
namespace {

namespace json = boost::json;

void Append(std::string& out, json::serializer& sr) {
  char buffer[4096];
  while (!sr.done()) {
    const json::string_view piece = sr.read(buffer);
    out.append(piece.data(), piece.size());
  }
}

void AppendValue(std::string& out, const json::value& value) {
  json::serializer sr;
  sr.reset(&value);
  Append(out, sr);
}

// `"key":`, escaped as the serializer escapes a string.
void AppendKey(std::string& out, std::string_view key) {
  bool plain = true;
  for (const char c : key) {
    if (c == '"' || c == '\\' || static_cast<unsigned char>(c) < 0x20) {
      plain = false;
      break;
    }
  }
  if (plain) {
    out.push_back('"');
    out.append(key);
    out.push_back('"');
  } else {
    json::serializer sr;
    sr.reset(json::string_view(key.data(), key.size()));
    Append(out, sr);
  }
  out.push_back(':');
}

void AppendMetadata(std::string& out, const json::object& meta,
                    const std::optional<std::string_view>& managed, TextSpan& span) {
  out.push_back('{');
  bool first = true;
  for (const json::key_value_pair& member : meta) {
    const std::string_view key(member.key().data(), member.key().size());
    const bool is_managed = key == "managedFields";
    if (is_managed && managed) continue;
    if (!first) out.push_back(',');
    first = false;
    AppendKey(out, key);
    const size_t start = out.size();
    AppendValue(out, member.value());
    if (is_managed) span = TextSpan{.offset = start, .size = out.size() - start};
  }
  if (managed && !managed->empty()) {
    if (!first) out.push_back(',');
    AppendKey(out, "managedFields");
    span = TextSpan{.offset = out.size(), .size = managed->size()};
    out.append(*managed);
  }
  out.push_back('}');
}

// --- Reading a valid JSON text -----------------------------------------------------------------

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

size_t SkipSpace(std::string_view text, size_t at) {
  while (at < text.size() && IsSpace(text[at])) ++at;
  return at;
}

// The end of the string token starting at `at` (its opening quote).
size_t SkipString(std::string_view text, size_t at) {
  for (++at; at < text.size(); ++at) {
    if (text[at] == '\\') {
      ++at;
    } else if (text[at] == '"') {
      return at + 1;
    }
  }
  return text.size();
}

// The end of the value starting at `at`.
size_t SkipValue(std::string_view text, size_t at) {
  if (at >= text.size()) return text.size();
  if (text[at] == '"') return SkipString(text, at);
  if (text[at] != '{' && text[at] != '[') {
    while (at < text.size() && text[at] != ',' && text[at] != '}' && text[at] != ']' &&
           !IsSpace(text[at])) {
      ++at;
    }
    return at;
  }
  int depth = 0;
  for (; at < text.size(); ++at) {
    const char c = text[at];
    if (c == '"') {
      at = SkipString(text, at) - 1;
    } else if (c == '{' || c == '[') {
      ++depth;
    } else if ((c == '}' || c == ']') && --depth == 0) {
      return at + 1;
    }
  }
  return text.size();
}

// Whether the string token `token` (quotes included) spells `want`.
bool KeyIs(std::string_view token, std::string_view want) {
  if (token.size() < 2) return false;
  const std::string_view inner = token.substr(1, token.size() - 2);
  if (inner.find('\\') == std::string_view::npos) return inner == want;
  // An escaped key: compare what it stands for.
  std::string unescaped;
  for (size_t i = 0; i < inner.size(); ++i) {
    const char c = inner[i];
    if (c != '\\') {
      unescaped.push_back(c);
      continue;
    }
    if (++i >= inner.size()) return false;
    switch (inner[i]) {
      case 'b': unescaped.push_back('\b'); break;
      case 'f': unescaped.push_back('\f'); break;
      case 'n': unescaped.push_back('\n'); break;
      case 'r': unescaped.push_back('\r'); break;
      case 't': unescaped.push_back('\t'); break;
      case 'u': {
        // Only ASCII can spell the keys looked for; anything else is another key.
        unsigned code = 0;
        for (size_t k = 1; k <= 4; ++k) {
          if (i + k >= inner.size()) return false;
          const char h = inner[i + k];
          code <<= 4;
          if (h >= '0' && h <= '9') code |= static_cast<unsigned>(h - '0');
          else if (h >= 'a' && h <= 'f') code |= static_cast<unsigned>(h - 'a' + 10);
          else if (h >= 'A' && h <= 'F') code |= static_cast<unsigned>(h - 'A' + 10);
          else return false;
        }
        if (code >= 0x80) return false;
        unescaped.push_back(static_cast<char>(code));
        i += 4;
        break;
      }
      default: unescaped.push_back(inner[i]); break;  // \" \\ \/
    }
  }
  return unescaped == want;
}

// The span of the value of the last member `key` of the object whose text starts at `at`.
TextSpan FindMember(std::string_view text, size_t at, std::string_view key) {
  TextSpan found;
  at = SkipSpace(text, at);
  if (at >= text.size() || text[at] != '{') return found;
  at = SkipSpace(text, at + 1);
  while (at < text.size() && text[at] == '"') {
    const size_t key_end = SkipString(text, at);
    const bool match = KeyIs(text.substr(at, key_end - at), key);
    at = SkipSpace(text, key_end);
    if (at >= text.size() || text[at] != ':') return TextSpan{};
    at = SkipSpace(text, at + 1);
    const size_t value_end = SkipValue(text, at);
    if (match) found = TextSpan{.offset = at, .size = value_end - at};
    at = SkipSpace(text, value_end);
    if (at < text.size() && text[at] == ',') at = SkipSpace(text, at + 1);
  }
  return found;
}

}  // namespace

std::string WriteObjectText(const json::object& object,
                            const std::optional<std::string_view>& managed, TextSpan& span) {
  span = TextSpan{};
  std::string out;
  out.reserve(1024);
  out.push_back('{');
  bool first = true;
  bool has_metadata = false;
  for (const json::key_value_pair& member : object) {
    const std::string_view key(member.key().data(), member.key().size());
    if (!first) out.push_back(',');
    first = false;
    AppendKey(out, key);
    has_metadata = has_metadata || key == "metadata";
    if (key == "metadata" && member.value().is_object()) {
      AppendMetadata(out, member.value().get_object(), managed, span);
    } else {
      AppendValue(out, member.value());
    }
  }
  // (Stamp gives every object a metadata object before it comes here.)
  if (!has_metadata && managed && !managed->empty()) {
    if (!first) out.push_back(',');
    AppendKey(out, "metadata");
    AppendMetadata(out, json::object(), managed, span);
  }
  out.push_back('}');
  // The store keeps the text as long as the state: not the spare room its growth left.
  out.shrink_to_fit();
  return out;
}

TextSpan FindManagedFields(std::string_view json) {
  const TextSpan metadata = FindMember(json, 0, "metadata");
  if (metadata.size == 0) return TextSpan{};
  const TextSpan managed =
      FindMember(json.substr(0, metadata.offset + metadata.size), metadata.offset, "managedFields");
  return managed;
}

}  // namespace muster::store
