#pragma once

// Internal to the table code (tables.cc, tables_groups.cc): the column definitions every table
// shares, and the columns and cells of the built-in kinds outside the core group, each as kube's
// pkg/printers/internalversion/printers.go prints it. Pure and thread-safe, as tables.h.

#include <cstdint>
#include <string_view>

#include "boost/json/array.hpp"
#include "boost/json/object.hpp"
#include "boost/json/value.hpp"

namespace muster::apiserver::tables {

// One metav1.TableColumnDefinition.
boost::json::object ColumnDef(std::string_view name, std::string_view type,
                              std::string_view description, int priority = 0,
                              std::string_view format = "");
// NAME and AGE, with ObjectMeta's descriptions as kube gives them.
boost::json::object NameColumn(int priority = 0);
boost::json::object AgeColumn();

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

}  // namespace muster::apiserver::tables
