// Where the HTTP(S) transport's configuration comes from (http_transport.h): a kubeconfig as
// client-go's clientcmd reads one, and rest.InClusterConfig's service account. Kept apart from
// http_transport.cc so that Beast stays out of this translation unit.

#include "client/http_transport.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string_view>
#include <utility>

#include "absl/strings/escaping.h"
#include "api/json_access.h"
#include "api/yaml.h"
#include "boost/json.hpp"
#include "common/files.h"
#include "fmt/format.h"

namespace muster::client {

namespace {

namespace json = boost::json;
using common::ReadFile;

using api::StringAt;

// The entry named `name` of a kubeconfig list ("clusters", "users", "contexts"), its inner
// object under `field`; an entry with no inner object (`user: {}` or `user:`) is empty.
absl::StatusOr<json::object> NamedEntry(const json::object& config, std::string_view list,
                                        std::string_view field, const std::string& name) {
  const json::value* entries = config.if_contains(list);
  if (entries != nullptr && entries->is_array()) {
    for (const json::value& e : entries->get_array()) {
      if (!e.is_object() || StringAt(e.get_object(), "name") != name) continue;
      const json::value* inner = e.get_object().if_contains(field);
      if (inner != nullptr && inner->is_object()) return inner->get_object();
      return json::object();
    }
  }
  return absl::InvalidArgumentError(fmt::format("no {} named \"{}\"", field, name));
}

// A PEM from `<key>-data` (base64) or the file `<key>` (relative to `dir`); "" when neither.
absl::StatusOr<std::string> DataOrFile(const json::object& obj, const std::string& key,
                                       const std::filesystem::path& dir) {
  std::string data = StringAt(obj, key + "-data");
  if (!data.empty()) {
    std::string decoded;
    if (!absl::Base64Unescape(data, &decoded)) {
      return absl::InvalidArgumentError(fmt::format("{}-data is not valid base64", key));
    }
    return decoded;
  }
  std::string file = StringAt(obj, key);
  if (file.empty()) return std::string();
  std::filesystem::path p(file);
  if (p.is_relative()) p = dir / p;
  auto text = ReadFile(p.string());
  if (!text) return absl::InvalidArgumentError(fmt::format("{}: cannot read {}", key, p.string()));
  return *text;
}

// The file's bytes, or FailedPrecondition "cannot read PATH: <why>".
absl::StatusOr<std::string> ReadFileOrError(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) {
    return absl::FailedPreconditionError(
        fmt::format("cannot read {}: {}", path, std::strerror(errno)));
  }
  std::string out;
  char buf[4096];
  size_t n = 0;
  while ((n = std::fread(buf, 1, sizeof(buf), f)) > 0) out.append(buf, n);
  const bool failed = std::ferror(f) != 0;
  const int err = errno;
  std::fclose(f);
  if (failed) {
    return absl::FailedPreconditionError(
        fmt::format("cannot read {}: {}", path, std::strerror(err)));
  }
  return out;
}

std::string TrimSpace(std::string text) {
  auto space = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; };
  while (!text.empty() && space(text.back())) text.pop_back();
  size_t start = 0;
  while (start < text.size() && space(text[start])) ++start;
  return text.substr(start);
}

}  // namespace

absl::StatusOr<HttpTransportConfig> LoadKubeconfig(const std::string& path,
                                                   const std::string& context) {
  auto text = ReadFile(path);
  if (!text) return absl::NotFoundError(fmt::format("kubeconfig {}: cannot read it", path));
  auto docs = api::ParseYamlDocuments(*text);
  if (!docs.ok()) {
    return absl::InvalidArgumentError(
        fmt::format("kubeconfig {}: {}", path, std::string(docs.status().message())));
  }
  if (docs->size() != 1 || !(*docs)[0].is_object()) {
    return absl::InvalidArgumentError(fmt::format("kubeconfig {}: not one YAML mapping", path));
  }
  const json::object& config = (*docs)[0].get_object();
  auto fail = [&path](const absl::Status& s) {
    return absl::InvalidArgumentError(
        fmt::format("kubeconfig {}: {}", path, std::string(s.message())));
  };
  std::string context_name = context.empty() ? StringAt(config, "current-context") : context;
  if (context_name.empty()) {
    return absl::InvalidArgumentError(
        fmt::format("kubeconfig {}: no current-context and no context given", path));
  }
  auto ctx = NamedEntry(config, "contexts", "context", context_name);
  if (!ctx.ok()) return fail(ctx.status());
  const std::string cluster_name = StringAt(*ctx, "cluster");
  auto cluster = NamedEntry(config, "clusters", "cluster", cluster_name);
  if (!cluster.ok()) return fail(cluster.status());
  json::object user;
  if (std::string user_name = StringAt(*ctx, "user"); !user_name.empty()) {
    auto u = NamedEntry(config, "users", "user", user_name);
    if (!u.ok()) return fail(u.status());
    user = std::move(*u);
  }
  if (user.contains("exec") || user.contains("auth-provider")) {
    return absl::InvalidArgumentError(fmt::format(
        "kubeconfig {}: user of context \"{}\" uses exec or auth-provider credentials, which "
        "muster does not support; use a token or a client certificate",
        path, context_name));
  }

  const std::filesystem::path dir = std::filesystem::path(path).parent_path();
  HttpTransportConfig out;
  out.server = StringAt(*cluster, "server");
  if (out.server.empty()) {
    return absl::InvalidArgumentError(
        fmt::format("kubeconfig {}: cluster \"{}\" has no server", path, cluster_name));
  }
  auto ca = DataOrFile(*cluster, "certificate-authority", dir);
  if (!ca.ok()) return fail(ca.status());
  out.ca_pem = std::move(*ca);
  if (const json::value* v = cluster->if_contains("insecure-skip-tls-verify"); v && v->is_bool()) {
    out.insecure_skip_tls_verify = v->get_bool();
  }
  out.tls_server_name = StringAt(*cluster, "tls-server-name");
  auto cert = DataOrFile(user, "client-certificate", dir);
  if (!cert.ok()) return fail(cert.status());
  out.client_cert_pem = std::move(*cert);
  auto key = DataOrFile(user, "client-key", dir);
  if (!key.ok()) return fail(key.status());
  out.client_key_pem = std::move(*key);
  out.token = StringAt(user, "token");
  if (std::string file = StringAt(user, "tokenFile"); !file.empty()) {
    std::filesystem::path p(file);
    if (p.is_relative()) p = dir / p;
    out.token_file = p.string();
  }
  out.default_namespace = StringAt(*ctx, "namespace");
  return out;
}

absl::StatusOr<HttpTransportConfig> InClusterConfig(const std::string& service_account_dir) {
  const char* host = std::getenv("KUBERNETES_SERVICE_HOST");
  const char* port = std::getenv("KUBERNETES_SERVICE_PORT");
  for (const auto& [name, value] : {std::pair{"KUBERNETES_SERVICE_HOST", host},
                                    std::pair{"KUBERNETES_SERVICE_PORT", port}}) {
    if (value == nullptr || *value == '\0') {
      return absl::NotFoundError(fmt::format("not running in a cluster: {} is not set", name));
    }
  }
  const std::string_view port_text = port;
  if (!std::all_of(port_text.begin(), port_text.end(),
                   [](char c) { return c >= '0' && c <= '9'; })) {
    return absl::InvalidArgumentError(
        fmt::format("KUBERNETES_SERVICE_PORT {:?} is not a port number", port_text));
  }
  std::string host_text = host;
  // As net.JoinHostPort: an IPv6 address goes in brackets.
  if (host_text.find(':') != std::string::npos && host_text.front() != '[') {
    host_text = "[" + host_text + "]";
  }
  const std::filesystem::path dir(service_account_dir);
  HttpTransportConfig out;
  out.server = fmt::format("https://{}:{}", host_text, port_text);
  auto ca = ReadFileOrError((dir / "ca.crt").string());
  if (!ca.ok()) return ca.status();
  out.ca_pem = std::move(*ca);
  out.token_file = (dir / "token").string();
  auto token = ReadFileOrError(out.token_file);
  if (!token.ok()) return token.status();
  if (TrimSpace(*token).empty()) {
    return absl::FailedPreconditionError(fmt::format("{} is empty", out.token_file));
  }
  if (const char* ns = std::getenv("POD_NAMESPACE"); ns != nullptr && *ns != '\0') {
    out.default_namespace = ns;
  } else if (auto file = ReadFile((dir / "namespace").string());
             file && !TrimSpace(*file).empty()) {
    out.default_namespace = TrimSpace(*file);
  } else {
    out.default_namespace = "default";
  }
  return out;
}

}  // namespace muster::client
