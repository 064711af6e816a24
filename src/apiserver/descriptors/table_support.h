#pragma once

// What the table code shares between its files (tables.cc, pod_node_tables.cc, tables_groups.cc):
// readers of a value pointer that read a miss as zero, so that a column reads as one chain, the
// column definitions every kind repeats, and the kinds whose rows live apart from tables.cc.
// Internal to src/apiserver/descriptors. Pure and thread-safe.

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>

#include "boost/json/array.hpp"
#include "boost/json/object.hpp"
#include "boost/json/value.hpp"

namespace muster::apiserver::table {

// --- Reading objects ---------------------------------------------------------------------------

// The member `key` of `v` when `v` is an object that has it; null otherwise (null in, null out).
const boost::json::value* Get(const boost::json::value* v, std::string_view key);
// Get along `keys` from `root`.
const boost::json::value* Path(const boost::json::value& root,
                               std::initializer_list<std::string_view> keys);
// Readers of a value pointer from Path() (a miss reads as zero), not api/json_access.h's
// object-and-key readers, so a column reads as one chain.
std::string_view StrAt(const boost::json::value* v);
int64_t IntAt(const boost::json::value* v);
bool BoolAt(const boost::json::value* v);
const boost::json::array& ArrayAt(const boost::json::value* v);
std::string Lower(std::string_view s);
// Whether `object`'s status.conditions has `type` with status "True".
bool HasTrueCondition(const boost::json::value& object, std::string_view type);

// --- Columns and cells -------------------------------------------------------------------------

boost::json::object ColumnDef(std::string_view name, std::string_view type,
                              std::string_view description, int priority = 0,
                              std::string_view format = "");
// kube's Name and Age columns, with its descriptions.
boost::json::object NameColumn(int priority = 0);
boost::json::object AgeColumn();
// The AGE cell of the timestamp at `keys` in `object`.
std::string Since(const boost::json::value& object, std::initializer_list<std::string_view> keys,
                  int64_t now_unix);

// --- The kinds with the longest rows (pod_node_tables.cc) ---------------------------------------

// printPod's and printNode's columns and cells.
boost::json::array PodColumns();
boost::json::array PodCells(const boost::json::value& pod, int64_t now_unix);
boost::json::array NodeColumns();
boost::json::array NodeCells(const boost::json::value& node, int64_t now_unix);

// --- The built-in kinds outside the core group (tables_groups.cc) -------------------------------

// scheduling.k8s.io/v1 PriorityClass: NAME, VALUE, GLOBAL-DEFAULT, AGE, PREEMPTIONPOLICY.
boost::json::array PriorityClassColumns();
boost::json::array PriorityClassCells(const boost::json::value& pc, int64_t now_unix);

// coordination.k8s.io/v1 Lease: NAME, HOLDER, AGE.
boost::json::array LeaseColumns();
boost::json::array LeaseCells(const boost::json::value& lease, int64_t now_unix);

// policy/v1 PodDisruptionBudget: NAME, MIN AVAILABLE, MAX UNAVAILABLE, ALLOWED DISRUPTIONS, AGE
// (printPodDisruptionBudget: an unset bound is "N/A").
boost::json::array PodDisruptionBudgetColumns();
boost::json::array PodDisruptionBudgetCells(const boost::json::value& pdb, int64_t now_unix);

// --- batch/v1 (tables_batch.cc) -----------------------------------------------------------------

// Job: NAME, STATUS, COMPLETIONS, DURATION, AGE (wide: CONTAINERS, IMAGES, SELECTOR).
boost::json::array JobColumns();
boost::json::array JobCells(const boost::json::value& job, int64_t now_unix);

// CronJob: NAME, SCHEDULE, TIMEZONE, SUSPEND, ACTIVE, LAST SCHEDULE, AGE (wide: CONTAINERS,
// IMAGES, SELECTOR).
boost::json::array CronJobColumns();
boost::json::array CronJobCells(const boost::json::value& cronjob, int64_t now_unix);

// apiextensions.k8s.io/v1 CustomResourceDefinition: NAME, CREATED AT (kube's default table
// convertor, which apiextensions uses: the creation time in RFC 3339, not an age).
boost::json::array CustomResourceDefinitionColumns();
boost::json::array CustomResourceDefinitionCells(const boost::json::value& crd);

}  // namespace muster::apiserver::table
