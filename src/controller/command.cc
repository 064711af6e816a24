#include "controller/command.h"

#include "api/json_access.h"
#include "fmt/format.h"

namespace muster::controller {

Command DecodeCommand(const boost::json::object& object) {
  Command command;
  command.ns = api::MetaString(object, "namespace");
  command.name = api::MetaString(object, "name");
  command.uid = api::MetaString(object, "uid");
  command.action = api::StringAt(object, "action");
  command.reason = api::StringAt(object, "reason");
  command.message = api::StringAt(object, "message");
  if (const boost::json::object* target = api::ObjectAt(object, "target")) {
    command.target = CommandTarget{api::StringAt(*target, "apiVersion"),
                                   api::StringAt(*target, "kind"), api::StringAt(*target, "name"),
                                   api::StringAt(*target, "uid")};
  }
  return command;
}

bool TargetsJob(const Command& command) {
  return command.target && command.target->api_version == kJobApiVersion &&
         command.target->kind == kJobKind;
}

bool TargetsQueue(const Command& command) {
  return command.target && command.target->api_version == kQueueApiVersion &&
         command.target->kind == kQueueKind;
}

Request JobCommandRequest(const Command& command) {
  Request request;
  request.event = kCommandIssuedEvent;
  request.action = command.action;
  return request;
}

std::string CommandIssuedMessage(std::string_view action) {
  return fmt::format(
      "Start to execute command {}, and clean it up to make sure executed not more than once.",
      action);
}

}  // namespace muster::controller
