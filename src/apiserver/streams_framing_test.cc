// The framing under kubectl exec, attach, cp and port-forward: RFC 6455 frames as a client sends
// them (masked, fragmented, control frames between fragments), the handshake's accept key,
// SPDY/3.1 frames with header blocks compressed against the protocol's dictionary (a client's
// bytes made by another zlib), and the channel protocol's messages and exit Status.

#include <gtest/gtest.h>
#include <zlib.h>

#include <string>

#include "apiserver/remote_command.h"
#include "apiserver/spdy.h"
#include "apiserver/websocket.h"
#include "boost/json/parse.hpp"

namespace muster::apiserver {
namespace {

namespace ws = websocket;
namespace rc = remote_command;
namespace json = boost::json;

// A frame as a client writes it: masked with `mask`.
std::string ClientFrame(uint8_t first_byte, std::string_view payload,
                        std::string_view mask = "\x01\x02\x03\x04") {
  std::string out;
  out.push_back(static_cast<char>(first_byte));
  const size_t n = payload.size();
  if (n < 126) {
    out.push_back(static_cast<char>(0x80 | n));
  } else if (n <= 0xFFFF) {
    out.push_back(static_cast<char>(0x80 | 126));
    out.push_back(static_cast<char>(n >> 8));
    out.push_back(static_cast<char>(n & 0xFF));
  } else {
    out.push_back(static_cast<char>(0x80 | 127));
    for (int shift = 56; shift >= 0; shift -= 8) {
      out.push_back(static_cast<char>((n >> shift) & 0xFF));
    }
  }
  out.append(mask);
  for (size_t i = 0; i < n; ++i) out.push_back(static_cast<char>(payload[i] ^ mask[i % 4]));
  return out;
}

TEST(WebSocketTest, AcceptKeyIsRfc6455s) {
  // RFC 6455 section 1.3's example.
  EXPECT_EQ(ws::AcceptKey("dGhlIHNhbXBsZSBub25jZQ=="), "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
}

TEST(WebSocketTest, ServerFramesAreUnmaskedWithTheShortestLength) {
  EXPECT_EQ(ws::EncodeFrame(ws::Opcode::kBinary, "\x01hi"), std::string("\x82\x03\x01hi", 5));
  std::string mid = ws::EncodeFrame(ws::Opcode::kBinary, std::string(300, 'x'));
  EXPECT_EQ(mid.substr(0, 4), std::string("\x82\x7e\x01\x2c", 4));
  EXPECT_EQ(mid.size(), 304u);
  std::string big = ws::EncodeFrame(ws::Opcode::kBinary, std::string(70000, 'x'));
  EXPECT_EQ(big.substr(0, 10), std::string("\x82\x7f\x00\x00\x00\x00\x00\x01\x11\x70", 10));
  EXPECT_EQ(ws::EncodeClose(1000, ""), std::string("\x88\x02\x03\xe8", 4));
}

TEST(WebSocketTest, DecodesMaskedMessagesAsTheyTrickleIn) {
  ws::Decoder d(1 << 20);
  const std::string wire = ClientFrame(0x82, std::string("\x00hello", 6)) +
                           ClientFrame(0x82, std::string(300, 'y'));
  for (char c : wire.substr(0, wire.size() - 1)) {
    d.Feed(std::string_view(&c, 1));
    auto m = d.Next();
    ASSERT_TRUE(m.ok());
    if (*m) {
      EXPECT_EQ((*m)->payload, std::string("\x00hello", 6));
    }
  }
  auto none = d.Next();
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(*none);  // the last byte of the second frame is missing
  d.Feed(wire.substr(wire.size() - 1));
  auto m = d.Next();
  ASSERT_TRUE(m.ok() && *m);
  EXPECT_EQ((*m)->opcode, ws::Opcode::kBinary);
  EXPECT_EQ((*m)->payload, std::string(300, 'y'));
}

TEST(WebSocketTest, JoinsFragmentsAroundAPing) {
  ws::Decoder d(1 << 20);
  d.Feed(ClientFrame(0x02, "ab") + ClientFrame(0x89, "p") + ClientFrame(0x00, "cd") +
         ClientFrame(0x80, "ef"));
  auto ping = d.Next();
  ASSERT_TRUE(ping.ok() && *ping);
  EXPECT_EQ((*ping)->opcode, ws::Opcode::kPing);
  EXPECT_EQ((*ping)->payload, "p");
  auto whole = d.Next();
  ASSERT_TRUE(whole.ok() && *whole);
  EXPECT_EQ((*whole)->opcode, ws::Opcode::kBinary);
  EXPECT_EQ((*whole)->payload, "abcdef");
}

TEST(WebSocketTest, RefusesWhatAClientMayNotSend) {
  auto refused = [](const std::string& wire, size_t limit = 1 << 20) {
    ws::Decoder d(limit);
    d.Feed(wire);
    return !d.Next().ok();
  };
  EXPECT_TRUE(refused(std::string("\x82\x01x", 3)));  // unmasked
  EXPECT_TRUE(refused(ClientFrame(0xC2, "x")));       // a reserved bit
  EXPECT_TRUE(refused(ClientFrame(0x83, "x")));       // a reserved opcode
  EXPECT_TRUE(refused(ClientFrame(0x09, "x")));       // a fragmented ping
  EXPECT_TRUE(refused(ClientFrame(0x80, "x")));       // a continuation of nothing
  EXPECT_TRUE(refused(ClientFrame(0x02, "a") + ClientFrame(0x82, "b")));
  EXPECT_TRUE(refused(ClientFrame(0x82, std::string(200, 'x')), 100));
  EXPECT_FALSE(refused(ClientFrame(0x82, std::string(100, 'x')), 100));
}

TEST(SpdyTest, TheDictionaryIsSpdy3s) {
  const std::string& dict = spdy::HeaderDictionary();
  EXPECT_EQ(dict.size(), 1423u);
  // The id a client's zlib stream names in its header (and zlib checks on inflateSetDictionary).
  EXPECT_EQ(adler32(1, reinterpret_cast<const Bytef*>(dict.data()), dict.size()), 0xe3c6a7c2u);
}

TEST(SpdyTest, ReadsTheSynStreamsOfAPortForward) {
  // Two SYN_STREAMs as kubectl opens a forwarded connection (the error stream, then the data
  // stream of request 0 to port 8080), their headers compressed by Python's zlib against the
  // dictionary: one zlib stream for both frames.
  const std::string wire(
      "\x80\x03\x00\x01\x00\x00\x00\x3d\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x78\xbb\xe3\xc6"
      "\xa7\xc2\x02\x25\x3a\x70\x3a\x2b\x29\x4a\x4d\xcc\x85\x16\x25\xac\xa9\xa0\x80\x86\x14\xcb"
      "\x45\xe0\x1c\x60\x61\x60\x61\x00\xa4\x39\x8b\x20\xd1\x98\x09\x4a\xde\x8c\x06\x00\x00\x00"
      "\x00\xff\xff\x80\x03\x00\x01\x00\x00\x00\x18\x00\x00\x00\x03\x00\x00\x00\x00\x00\x00\xc2"
      "\xaa\x19\x54\x0e\x25\x12\xd6\x0b\x00\x00\x00\xff\xff",
      101);
  spdy::Codec codec;
  codec.Feed(wire.substr(0, 50));
  auto partial = codec.Next();
  ASSERT_TRUE(partial.ok());
  EXPECT_FALSE(*partial);
  codec.Feed(wire.substr(50));
  auto first = codec.Next();
  ASSERT_TRUE(first.ok() && *first) << first.status();
  EXPECT_EQ((*first)->type, spdy::Frame::Type::kSynStream);
  EXPECT_EQ((*first)->stream_id, 1u);
  EXPECT_EQ((*first)->Header("streamtype"), "error");
  EXPECT_EQ((*first)->Header("port"), "8080");
  EXPECT_EQ((*first)->Header("requestid"), "0");
  auto second = codec.Next();
  ASSERT_TRUE(second.ok() && *second) << second.status();
  EXPECT_EQ((*second)->stream_id, 3u);
  EXPECT_EQ((*second)->Header("streamtype"), "data");
}

TEST(SpdyTest, WritesFramesAClientReads) {
  spdy::Codec server;
  EXPECT_EQ(server.Data(3, "hi", true), std::string("\x00\x00\x00\x03\x01\x00\x00\x02hi", 10));
  EXPECT_EQ(server.Ping(7), std::string("\x80\x03\x00\x06\x00\x00\x00\x04\x00\x00\x00\x07", 12));
  EXPECT_EQ(server.RstStream(5, spdy::kCancel),
            std::string("\x80\x03\x00\x03\x00\x00\x00\x08\x00\x00\x00\x05\x00\x00\x00\x05", 16));
  // A SYN_REPLY's compressed headers: a second codec (the client's side) reads them back.
  spdy::Codec client;
  // One zlib stream for both: the second frame's block continues the first's.
  client.Feed(server.SynReply(1, {{"x", "y"}}, false));
  client.Feed(server.SynReply(3, {}, true));
  auto one = client.Next();
  ASSERT_TRUE(one.ok() && *one) << one.status();
  EXPECT_EQ((*one)->type, spdy::Frame::Type::kSynReply);
  EXPECT_EQ((*one)->Header("x"), "y");
  auto two = client.Next();
  ASSERT_TRUE(two.ok() && *two) << two.status();
  EXPECT_EQ((*two)->stream_id, 3u);
  EXPECT_TRUE((*two)->fin());
}

TEST(SpdyTest, RefusesOtherVersionsAndBrokenHeaders) {
  spdy::Codec a;
  a.Feed(std::string("\x80\x02\x00\x01\x00\x00\x00\x0a\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00",
                     18));
  EXPECT_FALSE(a.Next().ok());
  spdy::Codec b;
  b.Feed(std::string("\x80\x03\x00\x01\x00\x00\x00\x0c\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00"
                     "\x12\x34",
                     20));
  EXPECT_FALSE(b.Next().ok());
}

TEST(RemoteCommandTest, ExitStatusIsKubesNonZeroExitCode) {
  EXPECT_EQ(json::parse(rc::ExitStatus(0, {"true"})),
            json::parse(R"({"metadata":{},"status":"Success"})"));
  json::value failed = json::parse(rc::ExitStatus(3, {"sh", "-c", "exit 3"}));
  EXPECT_EQ(failed.at("status"), "Failure");
  EXPECT_EQ(failed.at("reason"), "NonZeroExitCode");
  EXPECT_EQ(failed.at("details").at("causes").at(0).at("reason"), "ExitCode");
  EXPECT_EQ(failed.at("details").at("causes").at(0).at("message"), "3");
  EXPECT_EQ(failed.at("message"),
            "command terminated with non-zero exit code: command 'sh -c exit 3' exited with 3");
}

TEST(RemoteCommandTest, ResizeAndProtocols) {
  auto size = rc::ParseResize(R"({"Width":120,"Height":40})");
  ASSERT_TRUE(size);
  EXPECT_EQ(size->width, 120);
  EXPECT_EQ(size->height, 40);
  EXPECT_FALSE(rc::ParseResize(R"({"Width":-1,"Height":40})"));
  EXPECT_FALSE(rc::ParseResize("not json"));
  EXPECT_EQ(rc::ChannelMessage(rc::kStdout, "x"), std::string("\x01x", 2));
  const std::vector<std::string_view> served = {rc::kProtocolV5, rc::kProtocolV4};
  EXPECT_EQ(rc::ChooseProtocol("v5.channel.k8s.io", served), "v5.channel.k8s.io");
  EXPECT_EQ(rc::ChooseProtocol("v3.channel.k8s.io, v4.channel.k8s.io,v5.channel.k8s.io", served),
            "v4.channel.k8s.io");
  EXPECT_EQ(rc::ChooseProtocol("base64.channel.k8s.io", served), "");
}

}  // namespace
}  // namespace muster::apiserver
