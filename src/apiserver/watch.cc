// Watch: `GET <collection>?watch=true` as a chunked stream of JSON lines, as k8s.io/apiserver
// pkg/endpoints/handlers/watch.go serves it (the protocol: Kubernetes API concepts, "Efficient
// detection of changes", kubernetes.io/docs/reference/using-api/api-concepts/).
//
//   resourceVersion unset or "0"  synthetic ADDED events for the current matches, then live ones
//   resourceVersion N             events after N; N older than the store's history: one ERROR
//                                 event (410 Expired), then the stream ends; not a decimal
//                                 unsigned integer: 400
//   selectors                     applied per event, with ADDED/DELETED when an object starts or
//                                 stops matching
//   allowWatchBookmarks=true      a BOOKMARK every HandlerOptions::bookmark_interval
//   sendInitialEvents=true        synthetic ADDED events for the current state, which must be at
//                                 least resourceVersion (else one ERROR event, 504 Timeout "Too
//                                 large resource version"); with bookmarks they end with a
//                                 BOOKMARK annotated k8s.io/initial-events-end
//   sendInitialEvents=false       no synthetic events: events after resourceVersion, or from now
//   resourceVersionMatch          as kube validates it for watches (CheckListOptions): 422 but
//                                 NotOlderThan with sendInitialEvents
//   timeoutSeconds                the stream ends after it (default: 30 minutes)
//   Table Accept header           every event's object is a one-row Table

#include <algorithm>
#include <chrono>
#include <functional>
#include <limits>
#include <memory>
#include <string>

#include "api/json_access.h"
#include "api/json_parse.h"
#include "apiserver/descriptors/custom_resource.h"
#include "apiserver/descriptors/tables.h"
#include "apiserver/handlers.h"
#include "boost/json/parse.hpp"
#include "boost/json/serialize.hpp"
#include "fmt/format.h"

namespace muster::apiserver {

namespace json = boost::json;

namespace {

using Clock = std::chrono::steady_clock;

// Writes are coalesced up to this size (one chunk per burst of events, not per event).
constexpr size_t kFlushBytes = size_t{64} * 1024;
constexpr auto kPollInterval = std::chrono::milliseconds(250);

struct WatchParams {
  std::shared_ptr<const ResourceInfo> resource;
  // A custom resource served in another version than it is stored in: events carry this
  // apiVersion (conversion None); empty otherwise.
  std::string served_api_version;
  std::string ns;
  std::shared_ptr<const ObjectFilter> filter;
  bool filtered = false;
  bool synthetic = false;     // resourceVersion unset or 0, or sendInitialEvents
  uint64_t min_revision = 0;  // synthetic: the state must be at least this new
  int64_t from = 0;
  bool bookmarks = false;
  bool initial_events_end = false;
  bool table = false;
  TableOptions table_options;
  std::function<int64_t()> now_unix;
  // Logs a damaged object the synthetic ADDED events leave out (only loaded objects can be
  // damaged, so live events never carry one).
  std::function<void(const store::Object&)> skipped_damaged;
  std::chrono::milliseconds timeout{0};
  std::chrono::milliseconds bookmark_interval{0};
};

// One watch, served either by a thread of its own (Run, for in-process sinks) or by the
// server's event loop (the StreamSource methods): both fill the same buffer through Fill, which
// never waits.
class WatchStream : public StreamSource {
 public:
  WatchStream(store::Store& store, WatchParams p) : store_(store), p_(std::move(p)) {}

  // On the caller's thread until the watch ends, the sink fails or the client goes away.
  void Run(StreamSink& sink) {
    sink_ = &sink;
    events_ = sink.TakesEvents() && !p_.table;
    while (true) {
      Fill(Clock::now());
      if (!Flush() || finished_) break;
      if (more_) continue;
      if (sink.Cancelled()) break;
      const auto now = Clock::now();
      auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
          std::min<Clock::duration>(kPollInterval, NextPoll() - now));
      auto event = watch_->Next(std::max(ms, std::chrono::milliseconds(0)));
      if (!event.ok() || event->has_value()) pending_ = std::move(event);
    }
    CloseWatch();
  }

  // StreamSource, over HTTP.
  void Start(std::function<void()> wake) override { wake_ = std::move(wake); }

  Poll Next(std::string& out) override {
    Fill(Clock::now());
    out += buffer_;
    buffer_.clear();
    if (finished_) return Poll::kEnded;
    return more_ ? Poll::kMore : Poll::kWait;
  }

  [[nodiscard]] Clock::time_point NextPoll() const override {
    if (!opened_) return Clock::time_point::min();
    return p_.bookmarks ? std::min(deadline_, next_bookmark_) : deadline_;
  }

  void Stop() override { CloseWatch(); }

 private:
  // The list (for synthetic events) and the store's watch; on failure the ERROR event.
  void Open(Clock::time_point now) {
    opened_ = true;
    deadline_ = now + p_.timeout;
    next_bookmark_ = now + p_.bookmark_interval;
    if (p_.synthetic) {
      list_ = store_.List(p_.resource->StoreResource(), p_.ns);
      if (p_.min_revision > static_cast<uint64_t>(list_.revision)) {
        return Finish(TooLargeResourceVersion(p_.min_revision, list_.revision));
      }
      last_rv_ = list_.revision;
      initial_end_pending_ = p_.initial_events_end;
    } else {
      last_rv_ = p_.from;
    }
    auto w = store_.WatchFrom(p_.resource->StoreResource(), p_.ns, last_rv_);
    if (!w.ok()) return FinishExpired(w.status());
    watch_ = std::move(*w);
    if (wake_) watch_->SetReadyCallback(wake_);
  }

  // Appends what is ready to buffer_ (or hands events to an events sink), up to kFlushBytes;
  // more_ when it stopped there.
  void Fill(Clock::time_point now) {
    more_ = false;
    if (finished_) return;
    if (!opened_) {
      Open(now);
      if (finished_) return;
    }
    auto full = [this] { return ended_ || buffer_.size() >= kFlushBytes; };
    for (; next_item_ < list_.items.size(); ++next_item_) {
      if (full()) {
        more_ = true;
        return;
      }
      const store::Object& item = list_.items[next_item_];
      if (item.damaged) {
        p_.skipped_damaged(item);
        continue;
      }
      std::shared_ptr<const json::value> parsed = item.parsed;
      if (p_.filtered || events_) {
        if (!parsed) parsed = Parse(*item.json);
        if (p_.filtered && !Matches(parsed)) continue;
      }
      Append("ADDED", *item.json, parsed);
    }
    if (!list_.items.empty()) list_ = store::ListResult();  // sent: not held for the watch's life
    if (initial_end_pending_) {
      AppendBookmark(last_rv_, /*initial_events_end=*/true);
      initial_end_pending_ = false;
    }
    while (true) {
      if (full()) {
        more_ = true;
        return;
      }
      absl::StatusOr<std::optional<store::Event>> event =
          pending_ ? *std::exchange(pending_, std::nullopt)
                   : watch_->Next(std::chrono::milliseconds(0));
      if (!event.ok()) return FinishExpired(event.status());
      if (!event->has_value()) break;
      last_rv_ = (*event)->revision;
      Deliver(**event);
    }
    if (now >= deadline_) {
      finished_ = true;
      return;
    }
    if (p_.bookmarks && now >= next_bookmark_) {
      AppendBookmark(last_rv_, false);
      next_bookmark_ = now + p_.bookmark_interval;
    }
  }

  void CloseWatch() {
    if (watch_) watch_->Close();
  }

  void Finish(const ApiError& e) {
    SendError(e);
    CloseWatch();
    finished_ = true;
  }

  // The store's OutOfRange says "too old resource version: N (M)", kube's words for it.
  void FinishExpired(const absl::Status& status) {
    Finish(absl::IsOutOfRange(status) ? Expired(std::string(status.message()))
                                      : Internal(std::string(status.message())));
  }

 private:
  // A stored state the store no longer holds parsed; null if it is not a JSON object.
  static std::shared_ptr<const json::value> Parse(const std::string& text) {
    json::error_code ec;
    json::value v = api::ParseJsonText(text, ec);
    if (ec || !v.is_object()) return nullptr;
    return std::make_shared<const json::value>(std::move(v));
  }

  bool Matches(const std::shared_ptr<const json::value>& object) const {
    return object && FilterMatches(*p_.filter, *p_.resource, object->get_object());
  }

  static std::string ResourceVersionOf(const json::value& obj) {
    return obj.is_object() ? api::MetaString(obj.get_object(), "resourceVersion") : "";
  }

  void Deliver(const store::Event& e) {
    const char* type = e.type == store::EventType::kAdded      ? "ADDED"
                       : e.type == store::EventType::kModified ? "MODIFIED"
                                                               : "DELETED";
    std::shared_ptr<const json::value> parsed = e.parsed;
    if (p_.filtered) {
      if (!parsed) parsed = Parse(*e.object);
      bool now_matches = Matches(parsed);
      bool before_matches = false;
      if (e.previous) {
        before_matches = Matches(e.previous_parsed ? e.previous_parsed : Parse(*e.previous));
      }
      switch (e.type) {
        case store::EventType::kAdded:
          if (!now_matches) return;
          break;
        case store::EventType::kModified:
          if (now_matches && !before_matches) {
            type = "ADDED";
          } else if (!now_matches && before_matches) {
            type = "DELETED";
          } else if (!now_matches) {
            return;
          }
          break;
        case store::EventType::kDeleted:
          if (!now_matches && !before_matches) return;
          break;
      }
    }
    Append(type, *e.object, std::move(parsed));
  }

  // One event: as text, or handed over parsed to a sink that takes events.
  void Append(std::string_view type, const std::string& stored,
              std::shared_ptr<const json::value> parsed) {
    std::string converted;
    if (!p_.served_api_version.empty()) {
      json::error_code ec;
      json::value v = api::ParseJsonText(stored, ec);
      if (!ec && v.is_object()) {
        v.get_object()["apiVersion"] = p_.served_api_version;
        converted = json::serialize(v);
        parsed = std::make_shared<const json::value>(std::move(v));
      }
    }
    const std::string& object = converted.empty() ? stored : converted;
    if (events_) {
      if (!Flush()) return;
      if (!parsed) parsed = Parse(object);
      if (parsed && !sink_->WriteEvent(type, std::move(parsed))) ended_ = true;
      return;
    }
    buffer_ += R"({"type":")";
    buffer_ += type;
    buffer_ += R"(","object":)";
    if (p_.table) {
      std::vector<json::value> items;
      json::error_code ec;
      items.push_back(api::ParseJsonText(object, ec));
      std::string rv = ResourceVersionOf(items[0]);
      json::value table = ToTable(*p_.resource, std::move(items), rv, p_.now_unix(),
                                  p_.table_options);
      buffer_ += json::serialize(table);
    } else {
      buffer_ += object;
    }
    buffer_ += "}\n";
  }

  void AppendBookmark(int64_t rv, bool initial_events_end) {
    buffer_ += fmt::format(R"({{"type":"BOOKMARK","object":{{"kind":"{}","apiVersion":"{}",)"
                           R"("metadata":{{"resourceVersion":"{}")",
                           p_.resource->kind, p_.resource->ApiVersion(), rv);
    if (initial_events_end) {
      buffer_ += R"(,"annotations":{"k8s.io/initial-events-end":"true"})";
    }
    buffer_ += "}}}\n";
  }

  bool Flush() {
    if (ended_) return false;
    if (buffer_.empty()) return true;
    bool ok = sink_->Write(buffer_);
    buffer_.clear();
    return ok;
  }

  void SendError(const ApiError& e) {
    buffer_ += fmt::format(R"({{"type":"ERROR","object":{}}})"
                           "\n",
                           StatusJson(e));
  }

  store::Store& store_;
  WatchParams p_;
  StreamSink* sink_ = nullptr;  // Run's
  bool events_ = false;         // the sink takes events parsed (StreamSink::TakesEvents)
  bool ended_ = false;          // the sink refused an event
  std::function<void()> wake_;  // the event loop's (Start)
  bool opened_ = false;
  bool finished_ = false;             // the ERROR event or the timeout ended the watch
  bool more_ = false;                 // Fill stopped at kFlushBytes
  bool initial_end_pending_ = false;  // the initial-events-end BOOKMARK is still to send
  Clock::time_point deadline_;
  Clock::time_point next_bookmark_;
  store::ListResult list_;  // the synthetic ADDED events still to send, from next_item_
  size_t next_item_ = 0;
  std::unique_ptr<store::Watch> watch_;
  int64_t last_rv_ = 0;
  // An event Run took while waiting, to deliver first.
  std::optional<absl::StatusOr<std::optional<store::Event>>> pending_;
  std::string buffer_;
};

}  // namespace

HttpResponse Handlers::Watch(const HttpRequest& req, const Target& t) {
  WatchParams p;
  p.resource = t.resource;
  if (t.resource->custom != nullptr && t.resource->custom->storage_version != t.resource->version) {
    p.served_api_version = t.resource->ApiVersion();
  }
  p.ns = t.ns;
  auto filter = CompileFilter(req, *t.resource);
  if (!filter.ok()) return ErrorResponse(filter.error());
  p.filter = *filter;
  p.filtered = !FilterIsEmpty(**filter);

  if (auto invalid = CheckListOptions(req, /*watch=*/true)) return ErrorResponse(*invalid);
  auto rv = ParseResourceVersion(req.Param("resourceVersion"));
  if (!rv.ok()) return ErrorResponse(rv.error());
  // A resourceVersion past int64 is past every revision the store will reach: clamped so that
  // the store's `after + 1` stays in range.
  const int64_t after =
      static_cast<int64_t>(std::min<uint64_t>(*rv, std::numeric_limits<int64_t>::max() - 1));
  p.bookmarks = req.HasParam("allowWatchBookmarks") && QueryBool(req.Param("allowWatchBookmarks"));
  if (req.HasParam("sendInitialEvents")) {
    if (QueryBool(req.Param("sendInitialEvents"))) {
      p.synthetic = true;
      p.min_revision = *rv;
      p.initial_events_end = p.bookmarks;
    } else {
      p.from = after;  // 0: from now
    }
  } else if (*rv == 0) {
    p.synthetic = true;
  } else {
    p.from = after;
  }
  p.timeout = options_.default_watch_timeout;
  if (std::string_view ts = req.Param("timeoutSeconds"); !ts.empty()) {
    auto seconds = ParseInt(ts);
    if (!seconds || *seconds < 0) {
      return ErrorResponse(BadRequest(fmt::format("invalid timeoutSeconds: \"{}\"", ts)));
    }
    if (*seconds > 0) p.timeout = std::chrono::seconds(*seconds);
  }
  p.bookmark_interval = options_.bookmark_interval;
  p.skipped_damaged = [this](const store::Object& object) { LogSkippedDamaged("a watch", object); };
  p.table = WantsTable(req.accept);
  if (p.table) {
    p.table_options.include_object = ParseIncludeObject(req.Param("includeObject"));
    p.now_unix = [this] { return Now(); };
  }

  HttpResponse r;
  r.status = 200;
  r.content_type = "application/json";
  auto stream = std::make_shared<WatchStream>(store_, std::move(p));
  r.stream = [stream](StreamSink& sink) { stream->Run(sink); };
  r.source = stream;
  return r;
}

}  // namespace muster::apiserver
