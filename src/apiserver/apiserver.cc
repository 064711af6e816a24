#include "apiserver/apiserver.h"

#include <atomic>
#include <cstdio>
#include <functional>
#include <mutex>
#include <utility>

#include "absl/strings/numbers.h"
#include "apiserver/dashboard.h"
#include "apiserver/handlers.h"
#include "apiserver/kubeconfig.h"
#include "apiserver/lifecycle.h"
#include "apiserver/server.h"
#include "common/files.h"
#include "fmt/format.h"

namespace muster::apiserver {

struct ApiServer::State {
  ApiServerOptions options;
  std::unique_ptr<store::Store> store;
  std::unique_ptr<Handlers> handlers;
  // Published once the handlers know the port; requests before that get 503.
  std::atomic<Handlers*> ready{nullptr};
  std::unique_ptr<Lifecycle> lifecycle;
  std::unique_ptr<Server> server;
  std::string url;
  std::string dashboard_url;
  std::string listen_host;
  std::string kubeconfig_path;
  std::mutex stop_mu;
  bool stopped = false;
  std::mutex status_mu;
  std::function<std::string()> dashboard_status;  // guarded by status_mu

  // Called under the lock, so that SetDashboardStatus({}) returns only once no call of the old
  // function is under way.
  HttpResponse DashboardStatus() {
    HttpResponse r;
    r.headers.emplace_back("Cache-Control", "no-store");
    std::lock_guard lock(status_mu);
    r.body = dashboard_status ? dashboard_status() : "{}";
    return r;
  }
};

namespace {

bool IsLoopback(const std::string& address) {
  return address.rfind("127.", 0) == 0 || address == "::1";
}

bool IsUnspecified(const std::string& address) { return address == "0.0.0.0" || address == "::"; }

std::string HostForUrl(const std::string& address) {
  if (IsUnspecified(address)) return "127.0.0.1";
  if (address.find(':') != std::string::npos) return fmt::format("[{}]", address);
  return address;
}

}  // namespace

absl::StatusOr<ListenAddress> ParseListenAddress(const std::string& listen) {
  ListenAddress out;
  std::string host;
  std::string port;
  if (!listen.empty() && listen[0] == '[') {
    auto close = listen.find(']');
    if (close == std::string::npos || close + 1 >= listen.size() || listen[close + 1] != ':') {
      return absl::InvalidArgumentError(
          fmt::format("listen address \"{}\": want [IPV6]:PORT", listen));
    }
    host = listen.substr(1, close - 1);
    port = listen.substr(close + 2);
  } else {
    auto colon = listen.rfind(':');
    if (colon == std::string::npos) {
      return absl::InvalidArgumentError(
          fmt::format("listen address \"{}\": want ADDR:PORT", listen));
    }
    host = listen.substr(0, colon);
    port = listen.substr(colon + 1);
  }
  if (host.empty() || host == "localhost") host = "127.0.0.1";
  uint32_t p;
  if (!absl::SimpleAtoi(port, &p) || p > 65535) {
    return absl::InvalidArgumentError(
        fmt::format("listen address \"{}\": bad port \"{}\"", listen, port));
  }
  out.address = host;
  out.port = static_cast<uint16_t>(p);
  return out;
}

ApiServer::ApiServer(std::unique_ptr<State> state) : state_(std::move(state)) {}

ApiServer::~ApiServer() { Stop(); }

uint16_t ApiServer::port() const { return state_->server->port(); }
std::string ApiServer::listen_address() const {
  const std::string& a = state_->listen_host;
  return a.find(':') != std::string::npos ? fmt::format("[{}]:{}", a, port())
                                          : fmt::format("{}:{}", a, port());
}
const std::string& ApiServer::url() const { return state_->url; }
const std::string& ApiServer::dashboard_url() const { return state_->dashboard_url; }
const std::string& ApiServer::kubeconfig_path() const { return state_->kubeconfig_path; }
store::Store& ApiServer::store() { return *state_->store; }
Handlers& ApiServer::handlers() { return *state_->handlers; }

absl::StatusOr<std::unique_ptr<ApiServer>> ApiServer::Start(const ApiServerOptions& options) {
  auto listen = ParseListenAddress(options.listen);
  if (!listen.ok()) return listen.status();
  if (options.data_dir.empty()) return absl::InvalidArgumentError("--data-dir is required");
  // Owner-only: it holds the store, the kubeconfig and credentials.
  if (absl::Status s = common::CreatePrivateDirectories(options.data_dir); !s.ok()) {
    return absl::UnavailableError(fmt::format("data directory: {}", std::string(s.message())));
  }

  auto state = std::make_unique<State>();
  state->options = options;
  state->listen_host = listen->address;
  store::StoreOptions store_options;
  if (options.watch_history > 0) store_options.history = options.watch_history;
  auto store = store::Store::Open(options.data_dir + "/store.db", store_options);
  if (!store.ok()) return store.status();
  state->store = std::move(*store);
  std::function<void(std::string_view)> log = options.log;
  if (!log) {
    log = [](std::string_view line) { fmt::print(stderr, "muster apiserver: {}\n", line); };
  }
  // The server runs with them (lists and watches leave them out, DELETE removes them); the log
  // says what is damaged and how to clean up.
  for (const store::DamagedObject& d : state->store->Damaged()) {
    const std::string object = d.key.ns.empty()
                                   ? fmt::format("{} {}", d.key.resource, d.key.name)
                                   : fmt::format("{} {}/{}", d.key.resource, d.key.ns, d.key.name);
    const std::string line = fmt::format(
        "the store holds a damaged object: {} (revision {}): {}; lists and watches leave it out; "
        "delete it, or stop the server and run `muster fsck --data-dir {} --delete-damaged`",
        object, d.revision, d.problem, options.data_dir);
    log(line);
  }

  const bool tls = !options.insecure_http;
  if (!tls && !IsLoopback(listen->address)) {
    return absl::InvalidArgumentError(fmt::format(
        "--insecure-http serves loopback addresses only (127.0.0.0/8, ::1), not {}; without it "
        "the server serves TLS and requires the token in its kubeconfig",
        listen->address));
  }
  ServerOptions server_options;
  server_options.address = listen->address;
  server_options.port = listen->port;
  server_options.threads = options.threads;
  server_options.max_requests_inflight = options.limits.max_requests_inflight;
  server_options.max_mutating_requests_inflight = options.limits.max_mutating_requests_inflight;
  server_options.max_streams = options.limits.max_watches;
  server_options.max_streams_per_client = options.limits.max_watches_per_client;
  server_options.long_running = IsLongRunning;
  server_options.public_path = IsDashboardFilePath;
  std::string ca_pem;
  if (tls) {
    auto token = LoadOrCreateToken(options.data_dir + "/token");
    if (!token.ok()) return token.status();
    // The certificate names every address a client may dial: loopback by both names and
    // families, and the listen address when it is a specific one.
    std::vector<std::string> hosts = {"127.0.0.1", "localhost", "::1"};
    if (!IsUnspecified(listen->address) && listen->address != "127.0.0.1" &&
        listen->address != "::1") {
      hosts.push_back(listen->address);
    }
    auto material = LoadOrCreateTls(options.data_dir, hosts);
    if (!material.ok()) return material.status();
    server_options.bearer_token = *token;
    server_options.tls_cert_pem = material->server_cert_pem;
    server_options.tls_key_pem = material->server_key_pem;
    ca_pem = material->ca_cert_pem;
  }

  State* raw = state.get();
  auto server = Server::Start(server_options, [raw](const HttpRequest& req) {
    if (req.path == kDashboardStatusPath) return raw->DashboardStatus();
    if (IsDashboardPath(req.path)) return ServeDashboard(req);
    Handlers* handlers = raw->ready.load(std::memory_order_acquire);
    if (handlers == nullptr) {
      ApiError e;
      e.code = 503;
      e.reason = "ServiceUnavailable";
      e.message = "the server is starting";
      return ErrorResponse(e);
    }
    return handlers->Handle(req);
  });
  if (!server.ok()) return server.status();
  state->server = std::move(*server);
  const uint16_t port = state->server->port();

  HandlerOptions handler_options;
  handler_options.data_dir = options.data_dir;
  handler_options.server_address = fmt::format("{}:{}", HostForUrl(listen->address), port);
  handler_options.log = log;
  state->handlers = std::make_unique<Handlers>(*state->store, handler_options);
  if (auto s = state->handlers->Bootstrap(); !s.ok()) {
    state->server->Stop();
    return s;
  }
  state->ready.store(state->handlers.get(), std::memory_order_release);
  state->lifecycle = std::make_unique<Lifecycle>(*state->store);
  if (auto s = state->lifecycle->Start(); !s.ok()) {
    state->server->Stop();
    return s;
  }

  state->url =
      fmt::format("{}://{}:{}", tls ? "https" : "http", HostForUrl(listen->address), port);
  state->dashboard_url = state->url + "/ui/";
  if (tls) state->dashboard_url += "#token=" + server_options.bearer_token;
  state->kubeconfig_path = options.data_dir + "/kubeconfig";
  KubeconfigOptions kubeconfig;
  kubeconfig.server = state->url;
  kubeconfig.token = server_options.bearer_token;
  kubeconfig.ca_pem = ca_pem;
  if (auto s = WritePrivateFile(state->kubeconfig_path, RenderKubeconfig(kubeconfig)); !s.ok()) {
    state->lifecycle->Stop();
    state->server->Stop();
    return s;
  }
  return std::unique_ptr<ApiServer>(new ApiServer(std::move(state)));
}

void ApiServer::SetDashboardStatus(std::function<std::string()> status) {
  std::lock_guard lock(state_->status_mu);
  state_->dashboard_status = std::move(status);
}

void ApiServer::Stop() {
  if (!state_) return;
  {
    std::lock_guard lock(state_->stop_mu);
    if (state_->stopped) return;
    state_->stopped = true;
  }
  if (state_->server) state_->server->Stop();
  if (state_->lifecycle) state_->lifecycle->Stop();
}

}  // namespace muster::apiserver
