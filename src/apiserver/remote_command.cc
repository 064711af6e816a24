#include "apiserver/remote_command.h"

#include <algorithm>

#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "boost/json/parse.hpp"
#include "boost/json/serialize.hpp"
#include "boost/json/value.hpp"

namespace muster::apiserver::remote_command {

namespace json = boost::json;

std::string ChooseProtocol(std::string_view offered,
                           const std::vector<std::string_view>& supported) {
  const absl::string_view list(offered.data(), offered.size());
  for (absl::string_view p : absl::StrSplit(list, ',')) {
    p = absl::StripAsciiWhitespace(p);
    const std::string_view name(p.data(), p.size());
    if (std::find(supported.begin(), supported.end(), name) != supported.end()) {
      return std::string(name);
    }
  }
  return "";
}

std::string ChannelMessage(uint8_t channel, std::string_view data) {
  std::string out;
  out.reserve(data.size() + 1);
  out.push_back(static_cast<char>(channel));
  out.append(data);
  return out;
}

std::string ExitStatus(int exit_code, const std::vector<std::string>& command) {
  json::object status{{"metadata", json::object()}};
  if (exit_code == 0) {
    status["status"] = "Success";
    return json::serialize(status);
  }
  status["status"] = "Failure";
  // The kubelet's words (cri/streaming/remotecommand: "command terminated with non-zero exit
  // code: " and the runtime's error).
  status["message"] = "command terminated with non-zero exit code: command '" +
                      absl::StrJoin(command, " ") + "' exited with " + std::to_string(exit_code);
  status["reason"] = "NonZeroExitCode";
  status["details"] = json::object{
      {"causes", json::array{json::object{{"reason", "ExitCode"},
                                          {"message", std::to_string(exit_code)}}}}};
  return json::serialize(status);
}

std::string FailureStatus(std::string_view message) {
  json::object status{{"metadata", json::object()},
                      {"status", "Failure"},
                      {"message", json::string(message)},
                      {"reason", "InternalError"},
                      {"code", 500}};
  return json::serialize(status);
}

std::optional<TerminalSize> ParseResize(std::string_view text) {
  json::error_code ec;
  json::value v = json::parse(text, ec);
  if (ec || !v.is_object()) return std::nullopt;
  const json::object& o = v.get_object();
  const json::value* w = o.if_contains("Width");
  const json::value* h = o.if_contains("Height");
  auto dimension = [](const json::value* d) -> std::optional<uint16_t> {
    if (d == nullptr) return std::nullopt;
    if (d->is_uint64() && d->get_uint64() <= 0xFFFF) return static_cast<uint16_t>(d->get_uint64());
    if (d->is_int64() && d->get_int64() >= 0 && d->get_int64() <= 0xFFFF) {
      return static_cast<uint16_t>(d->get_int64());
    }
    return std::nullopt;
  };
  std::optional<uint16_t> width = dimension(w), height = dimension(h);
  if (!width || !height) return std::nullopt;
  return TerminalSize{*width, *height};
}

}  // namespace muster::apiserver::remote_command
