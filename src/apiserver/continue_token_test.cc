#include "apiserver/continue_token.h"

#include <string>

#include "gtest/gtest.h"

namespace muster::apiserver {
namespace {

constexpr char kKey[] = "server-key";

TEST(ContinueTokenTest, ATokenDecodesToThePageItWasMadeFor) {
  const std::string text = EncodeContinue(kKey, 42, "pods", "ns", "ns", "p-7");
  ApiResult<ContinueToken> token = DecodeContinue(text);
  ASSERT_TRUE(token.ok()) << token.error().message;
  EXPECT_EQ(token->revision, 42);
  EXPECT_EQ(token->ns, "ns");
  EXPECT_EQ(token->name, "p-7");
  EXPECT_EQ(token->start, "ns/p-7");
  EXPECT_TRUE(ContinueSignedFor(*token, kKey, "pods", "ns"));
}

TEST(ContinueTokenTest, ATokenIsGoodOnlyForItsListAndItsServer) {
  ApiResult<ContinueToken> token = DecodeContinue(EncodeContinue(kKey, 42, "pods", "ns", "ns", "p"));
  ASSERT_TRUE(token.ok());
  EXPECT_FALSE(ContinueSignedFor(*token, kKey, "configmaps", "ns"));  // another resource
  EXPECT_FALSE(ContinueSignedFor(*token, kKey, "pods", ""));          // all namespaces
  EXPECT_FALSE(ContinueSignedFor(*token, "another-server", "pods", "ns"));
  ContinueToken moved = *token;
  moved.revision = 41;  // a client's edit of the revision
  EXPECT_FALSE(ContinueSignedFor(moved, kKey, "pods", "ns"));
  moved = *token;
  moved.signature.clear();  // kube's own tokens carry no signature: not this server's
  EXPECT_FALSE(ContinueSignedFor(moved, kKey, "pods", "ns"));
}

TEST(ContinueTokenTest, WhatIsNotATokenGetsKubesMessage) {
  ApiResult<ContinueToken> bad = DecodeContinue("not base64!");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code, 400);
  EXPECT_EQ(bad.error().message,
            "invalid continue token: continue key is not valid: illegal base64 data at input byte 3");
  // base64url of {"v":"meta.k8s.io/v1","rv":0,"start":"ns/p"}: no revision.
  ApiResult<ContinueToken> no_rv =
      DecodeContinue("eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6MCwic3RhcnQiOiJucy9wIn0");
  ASSERT_FALSE(no_rv.ok());
  EXPECT_EQ(no_rv.error().message,
            "invalid continue token: continue key is not valid: incorrect encoded start "
            "resourceVersion (version meta.k8s.io/v1)");
}

}  // namespace
}  // namespace muster::apiserver
