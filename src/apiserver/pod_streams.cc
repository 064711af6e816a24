// pods/exec, pods/attach and pods/portforward: the checks kube-apiserver makes (pkg/registry/core
// pod/strategy.go streamLocation: the pod, its container, its node) and the kubelet's (the
// container running), then the connection upgrade that carries the streams (upgrade.h,
// server_upgrade.cc). The containers are reached through the node agents of this process
// (common::PodStreams, registered by `muster up`); without them every request is refused saying
// so.
//
// Protocols: exec and attach over WebSocket with v5.channel.k8s.io (kubectl 1.32's) or
// v4.channel.k8s.io; port-forward as SPDY/3.1 tunnelled in WebSocket (SPDY/3.1+portforward.k8s.io,
// kubectl 1.32's) or over a SPDY upgrade (portforward.k8s.io, its fallback). Exec and attach
// over SPDY are refused with a message saying what is served.

#include <string>
#include <vector>

#include "apiserver/handlers.h"
#include "apiserver/remote_command.h"
#include "apiserver/upgrade.h"
#include "apiserver/websocket.h"
#include "boost/json/parse.hpp"
#include "fmt/format.h"

namespace muster::apiserver {

namespace json = boost::json;
namespace rc = remote_command;

namespace {

bool StreamFlag(const HttpRequest& req, std::string_view name) {
  return req.HasParam(name) && QueryBool(req.Param(name));
}

// The answer to a refusal from the node agents, in the words they chose.
ApiError StreamsError(const absl::Status& s) {
  const std::string message(s.message());
  switch (s.code()) {
    case absl::StatusCode::kNotFound:
    case absl::StatusCode::kFailedPrecondition:
    case absl::StatusCode::kInvalidArgument:
      return BadRequest(message);
    case absl::StatusCode::kUnavailable: {
      ApiError e = Internal(message);
      e.code = 503;
      e.reason = "ServiceUnavailable";
      return e;
    }
    default:
      return Internal(message);
  }
}

std::string WebSocketHead(const HttpRequest& req, const std::string& protocol) {
  return fmt::format(
      "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
      "Sec-WebSocket-Accept: {}\r\nSec-WebSocket-Protocol: {}\r\n\r\n",
      websocket::AcceptKey(req.websocket_key), protocol);
}

}  // namespace

HttpResponse Handlers::PodStream(const HttpRequest& req, const Target& t) {
  const std::string& sub = t.subresource;
  const bool exec = sub == "exec";
  const bool forward = sub == "portforward";
  const ResourceInfo& res = *t.resource;

  common::PodStreamRequest request;
  request.ns = t.ns;
  request.pod = t.name;
  if (!forward) {
    for (const auto& [name, value] : req.query) {
      if (name == "command") request.command.push_back(value);
    }
    request.use_stdin = StreamFlag(req, "stdin");
    request.use_stdout = StreamFlag(req, "stdout");
    request.use_stderr = StreamFlag(req, "stderr");
    request.tty = StreamFlag(req, "tty");
    if (request.tty) request.use_stderr = false;  // the terminal carries both, as the kubelet's
    if (!request.use_stdin && !request.use_stdout && !request.use_stderr) {
      return ErrorResponse(BadRequest("you must specify at least 1 of stdin, stdout, stderr"));
    }
    if (exec && request.command.empty()) {
      return ErrorResponse(BadRequest("you must specify at least one command for the container"));
    }
  }

  auto live = store_.Get({res.StoreResource(), t.ns, t.name});
  if (!live.ok()) return ErrorResponse(NotFound(res.StoreResource(), t.name));
  json::error_code ec;
  json::value parsed = json::parse(*live->json, ec);
  if (ec || !parsed.is_object()) return ErrorResponse(DamagedObjectError(res, *live));
  const json::object& pod = parsed.get_object();
  request.uid = StringAt(ObjectAt(pod, "metadata"), "uid");
  if (!forward) {
    ApiResult<std::string> container =
        ChooseContainer(pod, std::string(req.Param("container")), t.name);
    if (!container.ok()) return ErrorResponse(container.error());
    request.container = *container;
  }
  if (StringAt(ObjectAt(pod, "spec"), "nodeName").empty()) {
    return ErrorResponse(BadRequest(fmt::format("pod {} does not have a host assigned", t.name)));
  }

  common::PodStreams* streams = pod_streams_.load();
  if (streams == nullptr) {
    return ErrorResponse(BadRequest(fmt::format(
        "pods/{} needs the node agents in the API server's process (muster up); this API server "
        "runs without them",
        sub)));
  }

  // The protocol, before anything starts.
  auto upgrade = std::make_shared<Upgrade>();
  const bool wants_websocket = req.upgrade == "websocket" && !req.websocket_key.empty();
  if (wants_websocket) {
    const std::vector<std::string_view> supported =
        forward ? std::vector<std::string_view>{rc::kPortForwardTunnel}
                : std::vector<std::string_view>{rc::kProtocolV5, rc::kProtocolV4};
    const std::string protocol = rc::ChooseProtocol(req.websocket_protocols, supported);
    if (protocol.empty()) {
      return ErrorResponse(BadRequest(fmt::format(
          "unable to upgrade: none of the WebSocket subprotocols requested ({}) is served; "
          "muster serves {}",
          req.websocket_protocols.empty() ? "none" : req.websocket_protocols,
          forward ? std::string(rc::kPortForwardTunnel)
                  : fmt::format("{} and {}", rc::kProtocolV5, rc::kProtocolV4))));
    }
    upgrade->kind = forward ? Upgrade::Kind::kPortForwardTunnel : Upgrade::Kind::kRemoteCommand;
    upgrade->v5 = protocol == rc::kProtocolV5;
    upgrade->head = WebSocketHead(req, protocol);
  } else if (req.upgrade.rfind("spdy/", 0) == 0) {
    if (!forward) {
      // kubectl falls back to SPDY when its WebSocket upgrade is refused: the refusal it then
      // shows is this one, so it says first what stands in the way.
      if (absl::Status s = streams->Check(request); !s.ok()) return ErrorResponse(StreamsError(s));
      return ErrorResponse(BadRequest(fmt::format(
          "muster serves pods/{} over WebSocket only ({}, {}), not SPDY", sub, rc::kProtocolV5,
          rc::kProtocolV4)));
    }
    if (rc::ChooseProtocol(req.stream_protocols, {rc::kPortForwardProtocol}).empty()) {
      return ErrorResponse(BadRequest("unable to upgrade: the SPDY stream protocol "
                                      "portforward.k8s.io was not requested"));
    }
    upgrade->kind = Upgrade::Kind::kPortForwardSpdy;
    upgrade->head = fmt::format(
        "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\n"
        "X-Stream-Protocol-Version: {}\r\n\r\n",
        rc::kPortForwardProtocol);
  } else {
    return ErrorResponse(BadRequest("Upgrade request required"));
  }

  if (forward) {
    if (absl::Status s = streams->Check(request); !s.ok()) return ErrorResponse(StreamsError(s));
    upgrade->pod_ip = StringAt(ObjectAt(pod, "status"), "podIP");
    upgrade->pod_name = t.name;
    upgrade->pod_uid = request.uid;
    if (upgrade->pod_ip.empty()) {
      return ErrorResponse(BadRequest(fmt::format("pod {} has no IP address yet", t.name)));
    }
  } else {
    auto session = exec ? streams->Exec(request) : streams->Attach(request);
    if (absl::IsInvalidArgument(session.status())) {
      // The command cannot run (no such executable): said after the upgrade, as the kubelet
      // does, so that a client falling back to SPDY does not see another answer.
      upgrade->failure = "error executing command in container: " +
                         std::string(session.status().message());
    } else if (!session.ok()) {
      return ErrorResponse(StreamsError(session.status()));
    } else {
      upgrade->session = *std::move(session);
    }
    upgrade->exec = exec;
    upgrade->command = request.command;
  }
  HttpResponse r;
  r.status = 101;
  r.upgrade = std::move(upgrade);
  return r;
}

}  // namespace muster::apiserver
