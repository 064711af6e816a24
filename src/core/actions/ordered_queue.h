#pragma once

// OrderedQueue: the priority queue the actions keep queues, jobs and tasks in, popped in the
// session's order (Volcano's pkg/scheduler/util/priority_queue.go over the session's
// QueueOrderFn, JobOrderFn and TaskOrderFn).

#include <algorithm>
#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

namespace muster::core {

// A heap ordered by a session order function; ties pop in push order (deterministic).
template <typename T>
class OrderedQueue {
 public:
  explicit OrderedQueue(std::function<bool(const T&, const T&)> less) : less_(std::move(less)) {}
  void Push(T v) {
    items_.push_back({std::move(v), seq_++});
    std::push_heap(items_.begin(), items_.end(), Cmp());
  }
  T Pop() {
    std::pop_heap(items_.begin(), items_.end(), Cmp());
    T v = std::move(items_.back().value);
    items_.pop_back();
    return v;
  }
  bool Empty() const { return items_.empty(); }
  // Every item, in no particular order.
  std::vector<T> Items() const {
    std::vector<T> out;
    out.reserve(items_.size());
    for (const Item& i : items_) out.push_back(i.value);
    return out;
  }
  size_t Size() const { return items_.size(); }

 private:
  struct Item {
    T value;
    uint64_t seq;
  };
  auto Cmp() const {
    return [this](const Item& a, const Item& b) {
      if (less_(a.value, b.value)) return false;
      if (less_(b.value, a.value)) return true;
      return a.seq > b.seq;
    };
  }
  std::function<bool(const T&, const T&)> less_;
  std::vector<Item> items_;
  uint64_t seq_ = 0;
};

}  // namespace muster::core
