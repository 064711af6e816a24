#pragma once

// The REST handlers over a real store in a directory of their own, at a fixed time, as the API
// server's handler tests call them: a request in, an HttpResponse out, no sockets. Header-only; a
// test of muster_apiserver links what it needs already.

#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "apiserver/handlers.h"
#include "apiserver/testing/test_server.h"
#include "boost/json/parse.hpp"
#include "boost/json/value.hpp"
#include "store/store.h"

namespace muster::apiserver::testing {

class HandlersFixture : public ::testing::Test {
 protected:
  static constexpr int64_t kFixtureNow = 1700000000;  // 2023-11-14T22:13:20Z, the handlers' clock

  void SetUp() override {
    dir_ = MakeTempDir("handlers");
    ASSERT_FALSE(dir_.empty());
    Open();
  }
  void TearDown() override {
    Close();
    std::filesystem::remove_all(dir_);
  }

  // The store in dir_ (with store_options_) and the handlers over it, bootstrapped; again after
  // Close, as a restart.
  void Open() {
    auto store = store::Store::Open(dir_ + "/store.db", store_options_);
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = std::move(*store);
    HandlerOptions h;
    h.data_dir = dir_;
    h.now_unix = [] { return kFixtureNow; };
    h.log = [this](std::string_view line) { log_.emplace_back(line); };
    handlers_ = std::make_unique<Handlers>(*store_, h);
    ASSERT_TRUE(handlers_->Bootstrap().ok());
  }
  void Close() {
    handlers_.reset();
    store_.reset();
  }

  HttpResponse Call(std::string method, std::string path, std::string body = "",
                    std::string content_type = "application/json",
                    std::vector<std::pair<std::string, std::string>> query = {},
                    std::string accept = "application/json") {
    HttpRequest req;
    req.method = std::move(method);
    req.path = std::move(path);
    req.body = std::move(body);
    req.content_type = std::move(content_type);
    req.query = std::move(query);
    req.accept = std::move(accept);
    return handlers_->Handle(req);
  }
  static boost::json::value Body(const HttpResponse& r) { return boost::json::parse(r.body); }

  std::string dir_;
  store::StoreOptions store_options_;  // for Open
  std::unique_ptr<store::Store> store_;
  std::unique_ptr<Handlers> handlers_;
  std::vector<std::string> log_;  // what the handlers logged (HandlerOptions::log)
};

}  // namespace muster::apiserver::testing
