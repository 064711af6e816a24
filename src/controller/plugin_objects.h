#pragma once

// Carrying out the job plugins' objects (job_plugins.h: PluginObject) through the API, as
// Volcano's plugins do in OnJobAdd, OnJobUpdate and OnJobDelete.
//
// Thread-safety: as the client's.

#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "client/client.h"
#include "controller/job_plugins.h"

namespace muster::controller {

// The API resource of a PluginObject::resource ("services", "configmaps", "secrets").
const client::Resource& PluginObjectResource(std::string_view plural);

// Creates the object when it is missing (completing it first), or brings an existing
// ConfigMap's data up to date. Services and Secrets are only made when the Job is added
// (`job_added`), and never changed afterwards.
absl::Status CreateOrUpdatePluginObject(client::Client& client, const PluginObject& object,
                                        const std::string& ns, bool job_added);

// Deletes the object; one already gone is no error.
absl::Status DeletePluginObject(client::Client& client, const PluginObject& object,
                                const std::string& ns);

}  // namespace muster::controller
