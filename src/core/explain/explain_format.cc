// The renderings of an Explanation (explain.h): the text `muster explain` prints and the JSON of
// its -o json and -o yaml.

#include "boost/json.hpp"
#include "api/time.h"
#include "core/explain/explain.h"
#include "fmt/format.h"

namespace muster::core {

std::string ExplanationText(const Explanation& e) {
  std::string out;
  out += fmt::format("PodGroup:   {}\n", e.pod_group);
  out += fmt::format("Queue:      {}", e.queue);
  if (e.position > 0) {
    out += fmt::format(" (position {} of {} waiting)", e.position, e.waiting_in_queue);
  }
  out += "\n";
  out += fmt::format("Phase:      {}{}\n", e.phase, e.started ? " (started)" : "");
  out += fmt::format("Admission:  {}\n", e.admission);
  out += fmt::format("Placement:  {}\n", e.placement);
  if (!e.blocking.empty()) out += fmt::format("Blocking:   {}\n", fmt::join(e.blocking, ", "));
  out += fmt::format("Estimate:   {}\n", e.estimate);
  return out;
}

boost::json::value ExplanationJson(const Explanation& e) {
  boost::json::object o;
  o["podGroup"] = e.pod_group;
  o["queue"] = e.queue;
  o["phase"] = e.phase;
  o["started"] = e.started;
  o["position"] = e.position;
  o["waitingInQueue"] = e.waiting_in_queue;
  boost::json::object admission;
  admission["admitted"] = e.admitted;
  admission["message"] = e.admission;
  boost::json::array shortfalls;
  for (const Shortfall& s : e.admission_shortfalls) {
    shortfalls.push_back(boost::json::object{
        {"resource", s.resource}, {"need", s.need}, {"free", s.free}, {"shortBy", s.short_by}});
  }
  admission["shortfalls"] = std::move(shortfalls);
  o["admission"] = std::move(admission);
  boost::json::object placement;
  placement["message"] = e.placement;
  placement["podsWaiting"] = e.pods_waiting;
  placement["podsFittingNow"] = e.fitting_pods;
  placement["podRequest"] = e.pod_request;
  placement["resource"] = e.resource;
  placement["nodeFilter"] = e.node_filter;
  placement["matchingNodes"] = e.matching_nodes;
  boost::json::array nodes;
  for (const NodeVerdict& v : e.nodes) {
    boost::json::array holders;
    for (const std::string& h : v.holders) holders.push_back(boost::json::string(h));
    nodes.push_back(boost::json::object{
        {"name", v.node}, {"free", v.free}, {"fits", v.fits}, {"heldBy", std::move(holders)}});
  }
  placement["nodes"] = std::move(nodes);
  boost::json::array blocking;
  for (const std::string& b : e.blocking) blocking.push_back(boost::json::string(b));
  placement["blockingSet"] = std::move(blocking);
  o["placement"] = std::move(placement);
  boost::json::object estimate;
  estimate["message"] = e.estimate;
  if (e.estimated_start) {
    estimate["start"] = api::FormatUnixTime(*e.estimated_start);
  } else {
    estimate["start"] = nullptr;
  }
  o["estimate"] = std::move(estimate);
  o["reason"] = e.reason;
  return o;
}

}  // namespace muster::core
