// The /ui/ handler: the dashboard's embedded files by name (dashboard.h).

#include "apiserver/dashboard.h"

#include <span>
#include <string>

#include "apiserver/dashboard/dashboard_files.h"

namespace muster::apiserver {
namespace {

std::string_view DashboardContentType(std::string_view name) {
  if (name.ends_with(".html")) return "text/html; charset=utf-8";
  if (name.ends_with(".css")) return "text/css; charset=utf-8";
  if (name.ends_with(".js")) return "text/javascript; charset=utf-8";
  return "application/octet-stream";
}

HttpResponse DashboardText(int status, std::string body) {
  HttpResponse r;
  r.status = status;
  r.content_type = "text/plain; charset=utf-8";
  r.body = std::move(body);
  return r;
}

}  // namespace

bool IsDashboardPath(std::string_view path) {
  return path == "/ui" || path.starts_with("/ui/");
}

bool IsDashboardFilePath(std::string_view path) {
  return IsDashboardPath(path) && path != kDashboardStatusPath;
}

HttpResponse ServeDashboard(const HttpRequest& req) {
  if (req.method != "GET" && req.method != "HEAD") {
    HttpResponse r = DashboardText(405, "method not allowed\n");
    r.headers.emplace_back("Allow", "GET, HEAD");
    return r;
  }
  if (req.path == "/ui") {
    HttpResponse r = DashboardText(301, "/ui/\n");
    r.headers.emplace_back("Location", "/ui/");
    return r;
  }
  std::string_view name = std::string_view(req.path).substr(4);  // after "/ui/"
  if (name.empty()) name = "index.html";
  for (const EmbeddedFile& file : DashboardFiles()) {
    if (file.name != name) continue;
    HttpResponse r;
    r.content_type = std::string(DashboardContentType(name));
    r.headers.emplace_back("Cache-Control", "no-cache");
    // The page loads nothing from elsewhere and may not be framed by another site.
    r.headers.emplace_back("Content-Security-Policy",
                           "default-src 'self'; frame-ancestors 'none'");
    r.headers.emplace_back("X-Content-Type-Options", "nosniff");
    r.headers.emplace_back("Referrer-Policy", "no-referrer");
    if (req.method == "GET") r.body = std::string(file.content);
    return r;
  }
  return DashboardText(404, "no such dashboard file\n");
}

}  // namespace muster::apiserver
