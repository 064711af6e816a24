// `muster fsck`: finds the objects of an API server's store whose stored JSON cannot be served
// (store::Object::damaged: written before the server refused numbers JSON cannot hold, or damaged
// on disk) and, with --delete-damaged, deletes them as DELETE does. Runs while the API server is
// stopped: the store file is locked while one has it open.

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "apiserver/descriptors/resources.h"
#include "apiserver/lifecycle.h"
#include "cmd/commands.h"
#include "fmt/format.h"
#include "store/store.h"

namespace muster::cmd {
namespace {

struct FsckFlags {
  std::string data_dir;
  bool delete_damaged = false;
};

std::string KeyText(const store::Key& key) {
  return key.ns.empty() ? fmt::format("{} {}", key.resource, key.name)
                        : fmt::format("{} {}/{}", key.resource, key.ns, key.name);
}

// The ops that delete a damaged object: PlanDelete's (a namespace becomes Terminating, so that
// the API server deletes its content and then it), or a plain delete where PlanDelete refuses
// (the namespace default, which the server creates afresh) or the registry lacks the resource.
std::vector<store::Op> DeleteOps(const store::Object& object, bool& deleted_now) {
  const apiserver::ResourceInfo* resource = nullptr;
  for (const apiserver::ResourceInfo& info : apiserver::AllResources()) {
    if (info.StoreResource() == object.key.resource) resource = &info;
  }
  if (resource != nullptr) {
    const int64_t now = std::chrono::duration_cast<std::chrono::seconds>(
                            std::chrono::system_clock::now().time_since_epoch())
                            .count();
    absl::StatusOr<apiserver::DeletePlan> plan =
        apiserver::PlanDelete(*resource, object, apiserver::DeleteOptions{}, now);
    if (plan.ok()) {
      deleted_now = plan->deleted_now;
      return std::move(plan->ops);
    }
  }
  deleted_now = true;
  store::Op op;
  op.kind = store::OpKind::kDelete;
  op.key = object.key;
  op.expected_revision = object.revision;
  return {std::move(op)};
}

int RunFsck(const FsckFlags& flags) {
  const std::string path = flags.data_dir + "/store.db";
  if (!std::filesystem::exists(path)) {
    fmt::print(stderr, "muster fsck: no store at {}\n", path);
    return 2;
  }
  absl::StatusOr<std::unique_ptr<store::Store>> store = store::Store::Open(path);
  if (!store.ok()) {
    fmt::print(
        stderr, "muster fsck: {}{}\n", std::string(store.status().message()),
        absl::IsUnavailable(store.status()) ? " (is the API server running? stop it first)" : "");
    return 2;
  }
  const std::vector<store::DamagedObject> damaged = (*store)->Damaged();
  for (const store::DamagedObject& d : damaged) {
    fmt::print("damaged: {} (revision {}): {}\n", KeyText(d.key), d.revision, d.problem);
  }
  if (damaged.empty()) {
    fmt::print("{}: no damaged objects\n", path);
    return 0;
  }
  if (!flags.delete_damaged) {
    fmt::print("{} damaged object{}; `muster fsck --data-dir {} --delete-damaged` deletes them\n",
               damaged.size(), damaged.size() == 1 ? "" : "s", flags.data_dir);
    return 1;
  }
  size_t left = 0;
  for (const store::DamagedObject& d : damaged) {
    absl::StatusOr<store::Object> object = (*store)->Get(d.key);
    absl::Status status = object.status();
    bool deleted_now = true;
    if (object.ok()) status = (*store)->Commit(DeleteOps(*object, deleted_now)).status();
    if (!status.ok()) {
      fmt::print(stderr, "muster fsck: cannot delete {}: {}\n", KeyText(d.key),
                 std::string(status.message()));
      ++left;
    } else if (deleted_now) {
      fmt::print("deleted {}\n", KeyText(d.key));
    } else {
      fmt::print("marked {} Terminating: the API server deletes its content, then it\n",
                 KeyText(d.key));
    }
  }
  return left == 0 ? 0 : 1;
}

}  // namespace

Subcommand AddFsckCommand(CLI::App& parent) {
  auto flags = std::make_shared<FsckFlags>();
  auto* app = parent.add_subcommand(
      "fsck",
      "Check an API server's store for damaged objects (stored JSON that does not parse back) "
      "while the server is stopped. Exit status: 0 when none is left, 1 when some are, 2 when "
      "the store cannot be opened.");
  app->add_option("--data-dir", flags->data_dir, "the API server's data directory")->required();
  app->add_flag("--delete-damaged", flags->delete_damaged,
                "delete the damaged objects, as DELETE does: outright, since their finalizers "
                "cannot be read (a namespace is marked Terminating, so that its content goes "
                "too)");
  return {app, [flags] { return RunFsck(*flags); }};
}

}  // namespace muster::cmd
