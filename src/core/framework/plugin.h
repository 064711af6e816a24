#pragma once

// What the conf names: a plugin, which registers its callbacks when a session opens, and an
// action, which runs over the session (Volcano's Plugin and Action interfaces,
// pkg/scheduler/framework/interface.go). Built by name through framework/registry.h.

namespace muster::core {

class Session;

class Plugin {
 public:
  virtual ~Plugin() = default;
  virtual void OnSessionOpen(Session& ssn) = 0;
  virtual void OnSessionClose(Session& ssn) {}
};

class Action {
 public:
  virtual ~Action() = default;
  virtual void Execute(Session& ssn) = 0;
};

}  // namespace muster::core
