// libFuzzer target for the REST handlers (handlers.h) without sockets: what server.cc hands
// them after Beast has parsed a request, with a method, target, content type, Accept header and
// body taken from the input, against a real store in a temporary directory that persists across
// inputs (so later requests meet objects earlier ones created) until MaybeResetFixture starts over.
//
// Input layout: byte 0 picks the method, byte 1 the Content-Type, byte 2 the Accept header; the
// rest is "<path>[?<query>]\n<body>". The query is split on '&' and '=' as given (server.cc
// percent-decodes before the handlers see it, so any bytes may arrive here).
//
// Properties: Handle() returns (never throws, never crashes) with an HTTP status in 200-599; a
// successful JSON response parses as JSON; every error response (>= 400) is a JSON Status object
// carrying the same code; no request is answered with 500 Internal Server Error, which would be a
// server bug. Streaming responses (watch, log
// follow) run against a sink that reports the client gone, so they return after the initial
// events. Round trip: whatever object a POST, PUT or PATCH stored (a 2xx with the object, not a
// Status), a GET of it answers 200 with that object's name, a list and a watch of its collection
// answer (the list 200, the watch's events all JSON), and a dry-run DELETE of it succeeds (a
// namespace kube keeps may be refused with 403); nothing a handler accepts can make the object
// unreadable or undeletable.

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "apiserver/handlers.h"
#include "apiserver/http.h"
#include "boost/json/parse.hpp"
#include "boost/json/value.hpp"
#include "store/store.h"

namespace muster::apiserver {
namespace {

class GoneSink : public StreamSink {
 public:
  bool Write(std::string_view data) override {
    written_ += data.size();
    if (keep_) text_.append(data);
    return written_ < (size_t{1} << 20);
  }
  bool Cancelled() override { return true; }
  void Keep() { keep_ = true; }
  const std::string& text() const { return text_; }

 private:
  size_t written_ = 0;
  bool keep_ = false;
  std::string text_;
};

struct Fixture {
  std::string dir;
  std::unique_ptr<store::Store> store;
  std::unique_ptr<Handlers> handlers;
};

Fixture& GetFixture();

void RemoveFixtureDir() {
  std::error_code ec;
  std::filesystem::remove_all(GetFixture().dir, ec);
}

Fixture* NewFixture() {
  auto* f = new Fixture;
  std::string pattern =
      (std::filesystem::temp_directory_path() / "muster-handlers-fuzz-XXXXXX").string();
  if (::mkdtemp(pattern.data()) == nullptr) std::abort();
  f->dir = pattern;
  store::StoreOptions options;
  options.history = 256;
  auto store = store::Store::Open(f->dir + "/store.db", options);
  if (!store.ok()) std::abort();
  f->store = std::move(*store);
  HandlerOptions h;
  h.data_dir = f->dir;
  h.now_unix = [] { return int64_t{1700000000}; };
  h.bookmark_interval = std::chrono::milliseconds(1);
  f->handlers = std::make_unique<Handlers>(*f->store, h);
  if (!f->handlers->Bootstrap().ok()) std::abort();
  return f;
}

Fixture*& CurrentFixture() {
  static Fixture* fixture = NewFixture();
  return fixture;
}

Fixture& GetFixture() {
  static const bool cleanup_registered = std::atexit(RemoveFixtureDir) == 0;
  (void)cleanup_registered;
  return *CurrentFixture();
}

// The store grows with every object an input creates, and with it the time of each list over it
// and the process's memory: an unseeded run of an hour would end on a list's timeout or the RSS
// limit. Every MUSTER_FUZZ_RESET_EVERY inputs (50,000 unless set; 0 never) the fixture starts
// over on an empty store; within a period later requests still meet what earlier ones created.
void MaybeResetFixture() {
  static const long every = [] {
    const char* v = std::getenv("MUSTER_FUZZ_RESET_EVERY");
    return v != nullptr ? std::strtol(v, nullptr, 10) : 50000L;
  }();
  static long inputs = 0;
  if (every <= 0 || ++inputs % every != 0) return;
  Fixture*& current = CurrentFixture();
  std::string dir = current->dir;
  delete current;  // the handlers before the store they use (member order), then the files
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  current = NewFixture();
}

// Reports which property failed, for the crash report, and stops the fuzzer there.
[[noreturn]] void Fail(const char* property, const HttpRequest& req, const HttpResponse& res) {
  std::fprintf(stderr, "handlers_fuzz: %s\n  request: %s %s (Content-Type %s)\n  response: %d %s\n",
               property, req.method.c_str(), req.path.c_str(), req.content_type.c_str(), res.status,
               res.body.substr(0, 400).c_str());
  __builtin_trap();
}

constexpr std::array<std::string_view, 8> kMethods = {"GET",    "POST", "PUT",     "PATCH",
                                                      "DELETE", "HEAD", "OPTIONS", "BREW"};
constexpr std::array<std::string_view, 10> kContentTypes = {
    "application/json",
    "application/yaml",
    "application/merge-patch+json",
    "application/json-patch+json",
    "application/strategic-merge-patch+json",
    "application/apply-patch+yaml",
    "application/vnd.kubernetes.protobuf",
    "application/json; charset=utf-8",
    "text/plain",
    "",
};
// What `kubectl get` sends.
constexpr std::string_view kTableAccept =
    "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;"
    "g=meta.k8s.io,application/json";
constexpr std::array<std::string_view, 7> kAccepts = {
    "application/json",
    kTableAccept,
    "application/vnd.kubernetes.protobuf,application/json",
    "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json",
    "application/com.github.proto-openapi.spec.v3@v1.0+protobuf",
    "*/*",
    "",
};

template <size_t N>
std::string_view Pick(const std::array<std::string_view, N>& options, uint8_t byte) {
  return options[byte % N];
}

HttpRequest MakeRequest(const uint8_t* data, size_t size) {
  HttpRequest req;
  req.method = std::string(Pick(kMethods, data[0]));
  req.content_type = std::string(Pick(kContentTypes, data[1]));
  req.accept = std::string(Pick(kAccepts, data[2]));
  std::string_view rest(reinterpret_cast<const char*>(data + 3), size - 3);
  size_t eol = rest.find('\n');
  std::string_view target = rest.substr(0, eol);
  if (eol != std::string_view::npos) req.body = std::string(rest.substr(eol + 1));
  size_t question = target.find('?');
  req.path = std::string(target.substr(0, question));
  if (question != std::string_view::npos) {
    std::string_view query = target.substr(question + 1);
    while (true) {
      size_t amp = query.find('&');
      std::string_view pair = query.substr(0, amp);
      size_t eq = pair.find('=');
      req.query.emplace_back(std::string(pair.substr(0, eq)),
                             eq == std::string_view::npos ? "" : std::string(pair.substr(eq + 1)));
      if (amp == std::string_view::npos) break;
      query = query.substr(amp + 1);
    }
  }
  return req;
}

HttpRequest Get(std::string path, std::vector<std::pair<std::string, std::string>> query = {}) {
  HttpRequest req;
  req.method = "GET";
  req.path = std::move(path);
  req.query = std::move(query);
  return req;
}

// The round trip of an object a write stored: `path` names it (".../<collection>/<name>").
void CheckRoundTrip(Handlers& handlers, const std::string& path, const std::string& name,
                    const HttpRequest& write) {
  HttpResponse got = handlers.Handle(Get(path));
  if (got.status != 200) Fail("round trip: a stored object's GET is not 200", write, got);
  boost::json::error_code error;
  boost::json::value object = boost::json::parse(got.body, error);
  const boost::json::value* meta = error || !object.is_object()
                                       ? nullptr
                                       : object.get_object().if_contains("metadata");
  const boost::json::value* got_name =
      meta != nullptr && meta->is_object() ? meta->get_object().if_contains("name") : nullptr;
  if (got_name == nullptr || *got_name != name.c_str()) {
    Fail("round trip: a stored object's GET does not return it", write, got);
  }
  const std::string collection = path.substr(0, path.rfind('/'));
  HttpResponse list = handlers.Handle(Get(collection));
  if (list.status != 200) Fail("round trip: the collection's list is not 200", write, list);
  (void)boost::json::parse(list.body, error);
  if (error) Fail("round trip: the collection's list does not parse", write, list);
  HttpResponse watch = handlers.Handle(Get(collection, {{"watch", "true"}}));
  if (watch.status != 200 || !watch.stream) {
    Fail("round trip: the collection's watch does not stream", write, watch);
  }
  GoneSink sink;
  sink.Keep();
  watch.stream(sink);
  std::string_view events = sink.text();
  while (!events.empty()) {
    const size_t eol = events.find('\n');
    (void)boost::json::parse(events.substr(0, eol), error);
    if (error) {
      watch.body = std::string(events.substr(0, eol));
      Fail("round trip: a watch event does not parse", write, watch);
    }
    events = eol == std::string_view::npos ? std::string_view() : events.substr(eol + 1);
  }
  HttpRequest remove;
  remove.method = "DELETE";
  remove.path = path;
  remove.query = {{"dryRun", "All"}};
  HttpResponse removed = handlers.Handle(remove);
  const bool kept_namespace =
      removed.status == 403 && collection.size() >= 14 &&
      collection.compare(collection.size() - 14, 14, "/v1/namespaces") == 0;
  if ((removed.status != 200 && removed.status != 202) && !kept_namespace) {
    Fail("round trip: a dry-run DELETE of a stored object fails", write, removed);
  }
}

// For a 2xx write that returned an object: the object's own path, or "" (a Status, a
// subresource other than status, a body without a name).
std::string StoredObjectPath(const HttpRequest& req, const HttpResponse& res, std::string* name) {
  if (req.method != "POST" && req.method != "PUT" && req.method != "PATCH") return "";
  if (res.status < 200 || res.status > 299 || res.content_type != "application/json") return "";
  if (req.HasParam("dryRun")) return "";
  boost::json::error_code error;
  boost::json::value v = boost::json::parse(res.body, error);
  if (error || !v.is_object()) return "";
  const boost::json::object& o = v.get_object();
  const boost::json::value* kind = o.if_contains("kind");
  if (kind == nullptr || !kind->is_string() || *kind == "Status") return "";
  const boost::json::value* meta = o.if_contains("metadata");
  const boost::json::value* n =
      meta != nullptr && meta->is_object() ? meta->get_object().if_contains("name") : nullptr;
  if (n == nullptr || !n->is_string() || n->get_string().empty()) return "";
  *name = std::string(n->get_string());
  std::string path = req.path;
  while (!path.empty() && path.back() == '/') path.pop_back();
  if (req.method == "POST") return path + "/" + *name;
  // PUT or PATCH of the object or of its status: the object's path ends in its name.
  if (path.size() > 7 && path.compare(path.size() - 7, 7, "/status") == 0) {
    path.resize(path.size() - 7);
  }
  if (path.size() <= name->size() ||
      path.compare(path.size() - name->size() - 1, name->size() + 1, "/" + *name) != 0) {
    return "";
  }
  return path;
}

}  // namespace
}  // namespace muster::apiserver

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using muster::apiserver::Fail;
  using muster::apiserver::Fixture;
  using muster::apiserver::GetFixture;
  using muster::apiserver::GoneSink;
  using muster::apiserver::HttpRequest;
  using muster::apiserver::HttpResponse;
  using muster::apiserver::MakeRequest;
  if (size < 3) return 0;
  muster::apiserver::MaybeResetFixture();
  Fixture& fixture = GetFixture();
  const HttpRequest req = MakeRequest(data, size);
  HttpResponse res = fixture.handlers->Handle(req);
  // MUSTER_FUZZ_VERBOSE=1: each request and response, to read what a reproducer does.
  static const bool verbose = std::getenv("MUSTER_FUZZ_VERBOSE") != nullptr;
  if (verbose) {
    std::fprintf(stderr, "%s %s (%s) -> %d %s\n", req.method.c_str(), req.path.c_str(),
                 req.content_type.c_str(), res.status, res.body.substr(0, 300).c_str());
  }
  if (res.status < 200 || res.status > 599) Fail("status out of range", req, res);
  if (res.status == 500) Fail("500 Internal Server Error", req, res);
  if (res.stream) {
    GoneSink sink;
    res.stream(sink);
    return 0;
  }
  if (res.status < 300 && res.content_type == "application/json") {
    // What a write returns is what it stored: it must be valid JSON (UTF-8 included), or every
    // later read-modify-write of the object fails to parse it.
    boost::json::error_code error;
    (void)boost::json::parse(res.body, error);
    if (error) Fail("a 2xx JSON body does not parse", req, res);
    std::string name;
    if (std::string path = muster::apiserver::StoredObjectPath(req, res, &name); !path.empty()) {
      muster::apiserver::CheckRoundTrip(*fixture.handlers, path, name, req);
    }
  }
  if (res.status >= 400 && res.content_type == "application/json") {
    // Strictly: whatever bytes the request carried, the Status must be JSON (UTF-8 included).
    boost::json::error_code error;
    boost::json::value status = boost::json::parse(res.body, error);
    if (error || !status.is_object()) Fail("error body is not a JSON object", req, res);
    const boost::json::object& o = status.get_object();
    const boost::json::value* kind = o.if_contains("kind");
    const boost::json::value* code = o.if_contains("code");
    if (kind == nullptr || *kind != "Status") Fail("error body is not a Status", req, res);
    if (code == nullptr || !code->is_int64() || code->get_int64() != res.status) {
      Fail("Status code differs from the HTTP status", req, res);
    }
  }
  return 0;
}
