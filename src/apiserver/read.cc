// The API server's reads (Handlers::Get and Handlers::List, handlers.h), as kube-apiserver's
// registry answers them (k8s.io/apiserver pkg/registry/generic/registry/store.go, Get and List;
// pkg/endpoints/handlers/get.go): resourceVersion semantics, paging with signed `continue`
// tokens (continue_token.h), Table output for kubectl, and the label and field selectors that
// lists and watches share.

#include <chrono>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "api/json_parse.h"
#include "api/selector.h"
#include "apiserver/continue_token.h"
#include "apiserver/descriptors/tables.h"
#include "apiserver/handlers.h"
#include "boost/json/parse.hpp"
#include "boost/json/serialize.hpp"
#include "fmt/format.h"

namespace muster::apiserver {

namespace json = boost::json;

namespace {

// Whether no event of `resource` in `ns` (all namespaces when empty) came after revision `since`
// up to `upto`, as far as the store's history tells (false once it no longer does).
bool UnchangedSince(store::Store& store, const std::string& resource, const std::string& ns,
                    int64_t since, int64_t upto) {
  auto watch = store.WatchFrom(resource, ns, since);
  if (!watch.ok()) return false;  // events since were dropped from the history
  auto event = (*watch)->Next(std::chrono::milliseconds(0));
  (*watch)->Close();
  return event.ok() && (!event->has_value() || (*event)->revision > upto);
}

TableOptions TableOptionsFor(const HttpRequest& req) {
  TableOptions options;
  options.include_object = ParseIncludeObject(req.Param("includeObject"));
  return options;
}

}  // namespace

HttpResponse Handlers::Get(const HttpRequest& req, const Target& t) {
  const ResourceInfo& res = *t.resource;
  // resourceVersion N asks for a state at least as new as N: the store's latest always is, unless
  // N is ahead of the store. kube waits up to 3 s for its watch cache to catch up; this store has
  // no lag behind its writes to wait out.
  auto min_revision = ParseResourceVersion(req.Param("resourceVersion"));
  if (!min_revision.ok()) return ErrorResponse(min_revision.error());
  if (const int64_t current = store_.Revision(); *min_revision > static_cast<uint64_t>(current)) {
    return ErrorResponse(TooLargeResourceVersion(*min_revision, current));
  }
  auto obj = store_.Get({res.StoreResource(), t.ns, t.name});
  if (!obj.ok()) {
    if (absl::IsNotFound(obj.status())) return ErrorResponse(NotFound(res.StoreResource(), t.name));
    return ErrorResponse(Internal(std::string(obj.status().message())));
  }
  // kube-apiserver also answers 500 for an object it cannot decode from etcd.
  if (obj->damaged) return ErrorResponse(DamagedObjectError(res, *obj));
  if (WantsTable(req.accept)) {
    std::vector<json::value> items;
    json::error_code ec;
    items.push_back(api::ParseJsonText(*obj->json, ec));
    json::value table =
        ToTable(res, std::move(items), std::to_string(obj->revision), Now(), TableOptionsFor(req));
    return JsonResponse(200, json::serialize(table));
  }
  return JsonResponse(200, *obj->json);
}

HttpResponse Handlers::List(const HttpRequest& req, const Target& t) {
  const ResourceInfo& res = *t.resource;
  auto filter = CompileFilter(req, res);
  if (!filter.ok()) return ErrorResponse(filter.error());
  const bool filtered = !FilterIsEmpty(**filter);
  if (auto invalid = CheckListOptions(req, /*watch=*/false)) return ErrorResponse(*invalid);

  int64_t limit = 0;
  if (std::string_view l = req.Param("limit"); !l.empty()) {
    auto parsed = ParseInt(l);
    if (parsed) limit = *parsed;
    if (!parsed || limit < 0) {
      return ErrorResponse(BadRequest(fmt::format("invalid limit: \"{}\"", l)));
    }
  }

  const std::string_view rv = req.Param("resourceVersion");
  store::ListResult list = store_.List(res.StoreResource(), t.ns);
  int64_t revision = list.revision;
  std::optional<ContinueToken> from;
  if (std::string_view c = req.Param("continue"); !c.empty()) {
    // storage.ValidateListOptions: the token first, then the resourceVersion beside it.
    auto token = DecodeContinue(c);
    if (!token.ok()) return ErrorResponse(token.error());
    if (!rv.empty() && rv != "0") {
      return ErrorResponse(
          BadRequest("specifying resource version is not allowed when using continue"));
    }
    // A token whose revision left the retained history can no longer give a consistent list.
    // That comes before the signature: a token from before a restart, signed with the key of
    // then, is as expired as kube's compacted ones. (A negative "rv", kube's "the latest", muster
    // never issues: such a token fails its signature.)
    if (token->revision > 0) {
      auto probe = store_.WatchFrom(res.StoreResource(), t.ns, token->revision);
      if (!probe.ok()) {
        return ErrorResponse(Expired(
            "The provided continue parameter is too old to display a consistent list result. "
            "You can start a new list without the continue parameter."));
      }
      (*probe)->Close();
    }
    if (!ContinueSignedFor(*token, continue_key_, res.StoreResource(), t.ns)) {
      return ErrorResponse(
          BadRequest("invalid continue token: continue key is not valid: it was not issued by "
                     "this server for this list"));
    }
    revision = token->revision;
    from = std::move(*token);
  } else if (!rv.empty()) {
    auto min_revision = ParseResourceVersion(rv);
    if (!min_revision.ok()) return ErrorResponse(min_revision.error());
    // NotOlderThan (and the legacy default): the latest state is never older, unless N is ahead
    // of the store (see Get).
    if (*min_revision > static_cast<uint64_t>(list.revision)) {
      return ErrorResponse(TooLargeResourceVersion(*min_revision, list.revision));
    }
    // Exact: the store keeps no older states, but the latest is the state at N when nothing of
    // this list changed since.
    if (req.Param("resourceVersionMatch") == "Exact" &&
        static_cast<int64_t>(*min_revision) != list.revision) {
      const auto at = static_cast<int64_t>(*min_revision);
      if (!UnchangedSince(store_, res.StoreResource(), t.ns, at, list.revision)) {
        return ErrorResponse(Expired("The resourceVersion for the provided list is too old."));
      }
      revision = at;
    }
  }

  const bool table = WantsTable(req.accept);
  std::vector<const store::Object*> selected;
  std::vector<json::value> parsed;
  std::string next_continue;
  for (const store::Object& item : list.items) {
    if (from && std::tie(item.key.ns, item.key.name) <= std::tie(from->ns, from->name)) continue;
    // kube-apiserver fails the whole list (500) on an object it cannot decode from etcd. The
    // store is local and the damage already logged at start: a usable list serves better, and
    // the log says what it left out.
    if (item.damaged) {
      LogSkippedDamaged("a list", item);
      continue;
    }
    std::optional<json::object> obj;
    if (filtered || table) {
      json::error_code ec;
      json::value v = api::ParseJsonText(*item.json, ec);
      if (!v.is_object()) continue;
      obj = std::move(v.get_object());
      if (filtered && !FilterMatches(**filter, res, *obj)) continue;
    }
    if (limit > 0 && static_cast<int64_t>(selected.size()) == limit) {
      const store::Object& last = *selected.back();
      next_continue = EncodeContinue(continue_key_, revision, res.StoreResource(), t.ns,
                                     last.key.ns, last.key.name);
      break;
    }
    selected.push_back(&item);
    if (table) parsed.emplace_back(std::move(*obj));
  }

  if (table) {
    TableOptions options = TableOptionsFor(req);
    options.continue_token = next_continue;
    json::value out = ToTable(res, std::move(parsed), std::to_string(revision), Now(), options);
    return JsonResponse(200, json::serialize(out));
  }

  std::string body;
  size_t total = 0;
  for (const auto* item : selected) total += item->json->size() + 1;
  body.reserve(total + 200);
  body += fmt::format(R"({{"kind":"{}","apiVersion":"{}","metadata":{{"resourceVersion":"{}")",
                      res.list_kind, res.ApiVersion(), revision);
  if (!next_continue.empty()) body += fmt::format(R"(,"continue":"{}")", next_continue);
  body += R"(},"items":[)";
  for (size_t i = 0; i < selected.size(); ++i) {
    if (i > 0) body += ',';
    body += *selected[i]->json;
  }
  body += "]}";
  return JsonResponse(200, std::move(body));
}

// --- Selectors -----------------------------------------------------------------------------------

struct ObjectFilter {
  bool has_labels = false;
  api::LabelSelectorMatcher labels;
  std::vector<api::FieldRequirement> fields;
};

ApiResult<std::shared_ptr<const ObjectFilter>> CompileFilter(const HttpRequest& req,
                                                             const ResourceInfo& resource) {
  auto filter = std::make_shared<ObjectFilter>();
  // Both parsers refuse with kube's own messages, which kube-apiserver answers as they are.
  if (std::string_view text = req.Param("labelSelector"); !text.empty()) {
    auto matcher = api::LabelSelectorMatcher::Parse(text);
    if (!matcher.ok()) return BadRequest(std::string(matcher.status().message()));
    filter->labels = std::move(*matcher);
    filter->has_labels = !filter->labels.MatchesEverything();
  }
  if (std::string_view text = req.Param("fieldSelector"); !text.empty()) {
    auto fields = api::ParseFieldSelector(text);
    if (!fields.ok()) return BadRequest(std::string(fields.status().message()));
    for (const auto& f : *fields) {
      if (!FieldSelectable(resource, f.field)) {
        return BadRequest(fmt::format("field label not supported: {}", f.field));
      }
    }
    filter->fields = std::move(*fields);
  }
  return std::shared_ptr<const ObjectFilter>(std::move(filter));
}

bool FilterIsEmpty(const ObjectFilter& filter) {
  return !filter.has_labels && filter.fields.empty();
}

bool FilterMatches(const ObjectFilter& filter, const ResourceInfo& resource,
                   const json::object& obj) {
  if (filter.has_labels) {
    api::StringMap labels;
    if (const json::value* meta = obj.if_contains("metadata"); meta && meta->is_object()) {
      if (const json::value* l = meta->get_object().if_contains("labels"); l && l->is_object()) {
        for (const auto& [k, v] : l->get_object()) {
          if (v.is_string()) labels.emplace(std::string(k), std::string(v.get_string()));
        }
      }
    }
    if (!filter.labels.Matches(labels)) return false;
  }
  if (!filter.fields.empty()) {
    api::StringMap fields;
    for (auto& [k, v] : SelectableFields(resource, obj)) fields.emplace(std::move(k), std::move(v));
    if (!api::MatchesFieldSelector(filter.fields, fields)) return false;
  }
  return true;
}

}  // namespace muster::apiserver
