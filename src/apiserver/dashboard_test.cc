// The /ui/ handler (dashboard.h): the embedded page's files by name with their content types, the
// redirect from /ui, refusals of other files and methods, and which paths need no token.

#include "apiserver/dashboard.h"

#include <string>

#include "gtest/gtest.h"

namespace muster::apiserver {
namespace {

HttpRequest Get(std::string path, std::string method = "GET") {
  HttpRequest req;
  req.method = std::move(method);
  req.path = std::move(path);
  return req;
}

std::string Header(const HttpResponse& r, std::string_view name) {
  for (const auto& [k, v] : r.headers) {
    if (k == name) return v;
  }
  return "";
}

TEST(DashboardTest, ServesThePageAndItsFilesWithTheirTypes) {
  HttpResponse index = ServeDashboard(Get("/ui/"));
  EXPECT_EQ(index.status, 200);
  EXPECT_EQ(index.content_type, "text/html; charset=utf-8");
  EXPECT_NE(index.body.find("<script src=\"dashboard.js\""), std::string::npos);
  EXPECT_EQ(Header(index, "Content-Security-Policy"), "default-src 'self'; frame-ancestors 'none'");
  HttpResponse js = ServeDashboard(Get("/ui/dashboard.js"));
  EXPECT_EQ(js.status, 200);
  EXPECT_EQ(js.content_type, "text/javascript; charset=utf-8");
  EXPECT_NE(js.body.find("?watch=1"), std::string::npos);
  EXPECT_EQ(ServeDashboard(Get("/ui/dashboard.css")).content_type, "text/css; charset=utf-8");
  HttpResponse head = ServeDashboard(Get("/ui/", "HEAD"));
  EXPECT_EQ(head.status, 200);
  EXPECT_TRUE(head.body.empty());
}

TEST(DashboardTest, RedirectsUiAndRefusesOtherFilesAndMethods) {
  HttpResponse bare = ServeDashboard(Get("/ui"));
  EXPECT_EQ(bare.status, 301);
  EXPECT_EQ(Header(bare, "Location"), "/ui/");
  EXPECT_EQ(ServeDashboard(Get("/ui/../kubeconfig")).status, 404);
  EXPECT_EQ(ServeDashboard(Get("/ui/nothing.js")).status, 404);
  HttpResponse post = ServeDashboard(Get("/ui/", "POST"));
  EXPECT_EQ(post.status, 405);
  EXPECT_EQ(Header(post, "Allow"), "GET, HEAD");
}

TEST(DashboardTest, OnlyTheFilesNeedNoToken) {
  EXPECT_TRUE(IsDashboardFilePath("/ui"));
  EXPECT_TRUE(IsDashboardFilePath("/ui/dashboard.js"));
  EXPECT_FALSE(IsDashboardFilePath(kDashboardStatusPath));
  EXPECT_TRUE(IsDashboardPath(kDashboardStatusPath));
  EXPECT_FALSE(IsDashboardFilePath("/uix"));
  EXPECT_FALSE(IsDashboardFilePath("/api/v1/pods"));
}

}  // namespace
}  // namespace muster::apiserver
