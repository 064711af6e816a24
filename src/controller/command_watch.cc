#include "controller/command_watch.h"

#include <cstdio>
#include <optional>
#include <string>
#include <utility>

#include "api/json_access.h"
#include "client/informer.h"
#include "controller/work_queue.h"
#include "fmt/format.h"

namespace muster::controller {

namespace json = boost::json;

struct CommandWatch::State {
  State(client::Client& c, Options o)
      : client(c),
        options(std::move(o)),
        commands(c, client::Commands()),
        queue({1, options.backoff_base, options.backoff_max},
              [this](const WorkItem& item, int) { return Take(item.key); }) {}

  client::Client& client;
  Options options;
  client::Informer commands;
  WorkQueues queue;
  bool started = false;

  void OnCommand(const json::object& object) {
    if (!options.accepts(DecodeCommand(object))) return;
    WorkItem item;
    item.key = api::MetaString(object, "namespace") + "/" + api::MetaString(object, "name");
    queue.Add(std::move(item));
  }

  // False when the delete was refused and the Command should come back after a backoff.
  bool Take(const std::string& key) {
    const size_t slash = key.find('/');
    std::optional<json::object> object = commands.Get(key.substr(0, slash), key.substr(slash + 1));
    if (!object) return true;  // taken or withdrawn meanwhile
    const Command command = DecodeCommand(*object);
    if (!options.accepts(command)) return true;
    client::DeleteOptions precondition;
    precondition.precondition_uid = command.uid;
    absl::Status deleted =
        client.Delete(client::Commands(), command.ns, command.name, precondition);
    // Gone, or another Command under its name now (its own add brings it here).
    if (absl::IsNotFound(deleted) || absl::IsFailedPrecondition(deleted) ||
        absl::IsAborted(deleted)) {
      return true;
    }
    if (!deleted.ok()) {
      std::fprintf(stderr, "command watch: deleting Command %s: %s\n", key.c_str(),
                   std::string(deleted.message()).c_str());
      return false;
    }
    options.on_taken(command);
    return true;
  }
};

CommandWatch::CommandWatch(client::Client& client, Options options)
    : state_(std::make_unique<State>(client, std::move(options))) {}

CommandWatch::~CommandWatch() { Stop(); }

absl::Status CommandWatch::Start() {
  State& s = *state_;
  if (s.started) return absl::OkStatus();
  s.started = true;
  client::InformerHandlers handlers;
  handlers.on_add = [&s](const json::object& o) { s.OnCommand(o); };
  s.commands.AddHandlers(std::move(handlers));
  for (absl::Status started : {s.queue.Start(), s.commands.Start()}) {
    if (!started.ok()) {
      Stop();
      return started;
    }
  }
  return absl::OkStatus();
}

bool CommandWatch::WaitForSync(std::chrono::milliseconds timeout) const {
  return state_->commands.WaitForSync(timeout);
}

void CommandWatch::Stop() {
  state_->commands.Stop();
  state_->queue.Stop();
}

bool CommandWatch::WaitIdle(std::chrono::milliseconds timeout) {
  return state_->queue.WaitIdle(timeout);
}

}  // namespace muster::controller
