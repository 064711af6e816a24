#pragma once

// muster up's dashboard: the static page at /ui/ (index.html, dashboard.css, dashboard.js from
// dashboard/, compiled into the binary), which reads the cluster from the same API server with
// lists and watches, as kubectl does. The files carry no cluster data and are served without a
// token; the page sends the bearer token that `muster up` prints in its URL's fragment
// (/ui/#token=...; a fragment never reaches a server or its logs) with every API request.
//
// Thread-safety: stateless; safe from any thread.

#include <string_view>

#include "apiserver/http.h"

namespace muster::apiserver {

// /ui and everything below it.
bool IsDashboardPath(std::string_view path);

// The dashboard's files: IsDashboardPath, but not kDashboardStatusPath. What may be served
// without a token.
bool IsDashboardFilePath(std::string_view path);

// Where the page reads what the API server's objects do not hold (the scheduler's cycle
// latency): the JSON object the process sets with ApiServer::SetDashboardStatus. Like the API,
// it requires the token.
inline constexpr std::string_view kDashboardStatusPath = "/ui/status";

// GET or HEAD /ui/ (index.html) or /ui/<file>: the file, with its content type and no caching
// across builds (Cache-Control: no-cache); /ui: a redirect to /ui/; another file: 404; another
// method: 405. Precondition: IsDashboardPath(req.path).
HttpResponse ServeDashboard(const HttpRequest& req);

}  // namespace muster::apiserver
