#pragma once

// The node agent's names for the shared JSON readers (api/json_access.h) and for common::Cat,
// so the agent's files read them unqualified as they did when these lived here.

#include "api/json_access.h"
#include "common/strings.h"

namespace muster::node {

using api::ArrayAt;
using api::IntAt;
using api::MetaString;
using api::ObjectAt;
using api::StringAt;
using common::Cat;

}  // namespace muster::node
